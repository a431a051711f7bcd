"""A cold one-shot's agent started before click and the command tree load.

`avatar [global options] chat PROMPT`, and nothing else, is read here from the bare argv: the
engine is built from the global options as `AppState.engine` builds it, and its agent launched
ahead (`Engine.launch_ahead`), so that the agent boots while the rest of a turn's code loads
(~25 ms of a cold one-shot: benchmarks/oneshot.py). The command then runs here, without click,
and takes that engine (`AppState.engine`, which is where anything the engine has to say is
said); one no command took is stopped (`avatar.cli.state.discard_prebuilt`).

Only the plain shapes are read here: anything else (another option, `--opt=value`, a value
starting with `-`, a prompt that is `-`, empty, not UTF-8, or that may mention a file or an
image) is left to click, as is every error: nothing is said from here, and a command this
reads differently from click would only start without an agent ahead.
"""

from __future__ import annotations

from pathlib import Path

from avatar.cli.state import AppState, prebuild

#: The global options of `avatar` that take a value (click's `cli` group, avatar.cli.commands;
#: tests/cli/test_early.py checks the two agree), by the name of their `AppState` field.
VALUED = {
    "-p": "provider",
    "--provider": "provider",
    "-m": "model",
    "--model": "model",
    "--preset": "preset",
    "-C": "cwd",
    "-c": "config",
    "--config": "config",
}
#: The global flags.
FLAGS = {"--trust": "trust"}
#: Characters a prompt that mentions a file or pastes an image path holds (`@path`, `/…`,
#: `~/…`): its mentions are read before any agent starts (a bad image fails first).
MENTIONING = frozenset("@/~")


def one_shot_state(args: list[str]) -> AppState | None:
    """The global options of `avatar [global options] chat PROMPT` as an `AppState`, for the
    plain shapes of the module docstring; None for anything else."""
    given: dict[str, str | bool] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        value: str | bool
        if arg in FLAGS:
            name, value, i = FLAGS[arg], True, i + 1
        elif arg in VALUED and i + 1 < len(args) and not args[i + 1].startswith("-"):
            name, value, i = VALUED[arg], args[i + 1], i + 2
        else:
            break
        if name in given:  # (given twice: click's to read)
            return None
        given[name] = value
    if args[i : i + 1] != ["chat"] or len(args) != i + 2 or not _plain_prompt(args[i + 1]):
        return None
    cwd = Path(str(given["cwd"])) if "cwd" in given else None
    config = Path(str(given["config"])) if "config" in given else None
    if (cwd is not None and not cwd.is_dir()) or (config is not None and config.is_dir()):
        return None
    return AppState(
        provider=_text(given.get("provider")),
        model=_text(given.get("model")),
        preset=_text(given.get("preset")),
        cwd=(cwd or Path.cwd()).resolve(),
        config=config,
        trust=given.get("trust") is True,
    )


def _plain_prompt(prompt: str) -> bool:
    if prompt.startswith("-") or not prompt.strip() or MENTIONING & set(prompt):
        return False
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _text(value: str | bool | None) -> str | None:
    return value if isinstance(value, str) else None


def start_ahead(args: list[str]) -> None:
    """For `avatar [global options] chat PROMPT`, build the engine now, start its agent and run
    the command, ending the process (`SystemExit`); nothing otherwise, or when building the
    engine fails (click then runs the command, which fails as it would have).

    click is not needed for these shapes: they are `chat PROMPT` with no option of its own
    (`run_chat`'s defaults), and the ~15 ms of loading and parsing it would compete with the
    booting agent for the CPU."""
    state = one_shot_state(args)
    if state is None or not prebuild(state):
        return
    from avatar.cli.chat import run_chat
    from avatar.cli.failing import run_command

    run_command(lambda: run_chat(state, args[-1]))
