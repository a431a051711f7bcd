"""A cold one-shot's agent started before click and the command tree load.

`avatar [global options] chat PROMPT`, and nothing else, is read here from the bare argv: the
engine is built from the global options as `AppState.engine` builds it, and its agent launched
ahead (`Engine.launch_ahead`), so that the agent boots while the rest of a turn's code loads
(~25 ms of a cold one-shot: benchmarks/oneshot.py). The command then runs here, without click,
and takes that engine (`AppState.engine`, which is where anything the engine has to say is
said); one no command took is stopped (`avatar.cli.state.discard_prebuilt`). So does
`avatar [global options] session list`, the command a status line runs again and again.

Only the plain shapes are read here: anything else (another option, `--opt=value`, a value
starting with `-`, a prompt that is `-`, empty, not UTF-8, or that may mention a file or an
image) is left to click, as is every error: nothing is said from here, and a command this
reads differently from click would only start without an agent ahead.
"""

from __future__ import annotations

from pathlib import Path

from avatar.cli.plain import plain_prompt
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


def plain_command(args: list[str]) -> tuple[AppState, list[str]] | None:
    """The global options of `args` as an `AppState`, and the words after them; None where
    click must read them (see the module docstring)."""
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
    cwd = Path(str(given["cwd"])) if "cwd" in given else None
    config = Path(str(given["config"])) if "config" in given else None
    if (cwd is not None and not cwd.is_dir()) or (config is not None and config.is_dir()):
        return None
    state = AppState(
        provider=_text(given.get("provider")),
        model=_text(given.get("model")),
        preset=_text(given.get("preset")),
        cwd=(cwd or Path.cwd()).resolve(),
        config=config,
        trust=given.get("trust") is True,
    )
    return state, args[i:]


def one_shot_state(args: list[str]) -> AppState | None:
    """The global options of `avatar [global options] chat PROMPT` as an `AppState`, for the
    plain shapes of the module docstring; None for anything else."""
    read = plain_command(args)
    if read is None:
        return None
    state, words = read
    return state if _one_shot(words) else None


def _one_shot(words: list[str]) -> bool:
    return len(words) == 2 and words[0] == "chat" and plain_prompt(words[1])


def _text(value: str | bool | None) -> str | None:
    return value if isinstance(value, str) else None


def run_plain(args: list[str]) -> None:
    """Run `avatar [global options] chat PROMPT` or `avatar [global options] session list`
    here, ending the process (`SystemExit`): the one-shot's engine built and its agent started
    first. Nothing for anything else, or when the one-shot's engine cannot be built (click
    then runs the command, which fails as it would have).

    click is not needed for these shapes: they are the commands with no option of their own
    (the defaults of `run_chat` and `list_sessions`), and loading it and the command tree
    (~15 ms) would delay a listing, and compete with a booting agent for the CPU."""
    read = plain_command(args)
    if read is None:
        return
    from avatar.cli.failing import run_command

    state, words = read
    if words == ["session", "list"]:
        from avatar.cli.sessions import list_sessions

        run_command(lambda: list_sessions(state, state.provider))
    if _one_shot(words) and prebuild(state):
        from avatar.cli.chat import run_chat

        run_command(lambda: run_chat(state, words[1]))
