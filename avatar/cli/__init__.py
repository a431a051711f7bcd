"""Command-line entry point. `avatar --version` and `avatar --help` answer before anything heavy
is imported."""

from __future__ import annotations

import sys

from avatar.core.version import __version__


def main(argv: list[str] | None = None) -> None:
    """Run the `avatar` command."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        sys.stdout.write(f"avatar {__version__}\n")
        raise SystemExit(0)
    if args in (["--help"], ["-h"]):
        # click and the command tree are ~80 ms of rendering a text that changes only with the
        # commands: it is shipped (avatar/cli/help.txt) and printed when click would print
        # exactly it; otherwise (a narrow terminal, say) click renders it below.
        from avatar.cli.helptext import print_shipped_help

        if print_shipped_help():
            raise SystemExit(0)
    for stream in (sys.stdout, sys.stderr):
        # Text from a model or a session file may hold a lone surrogate (`"\ud800"` is valid
        # JSON): it is printed as that escape, never an error that ends the command.
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    # A running server runs the command in its warm process (`avatar.server.client`): asked
    # before click, pydantic or the ACP SDK load, so that this costs little more than Python.
    from avatar.server.client import served

    served_code = served(args)
    if served_code is not None:
        raise SystemExit(served_code)
    _start_remembered(args)
    if _acp(args):
        # An editor asks `initialize` the moment it starts its agent: the answer is given
        # while the rest loads (`avatar.cli.acp.stdio`).
        from avatar.cli.acp.stdio import listen

        listen()
    import gc

    from avatar.cli.startup import inspect_when_used, settled, without_pydantic_plugins
    from avatar.core.dataclass_code import keep as keep_dataclass_code
    from avatar.core.quick_exit import exit_now

    # Start-up creates the objects that live as long as the process (modules, classes,
    # validators); the collector walking them again and again while they are made costs
    # ~90 ms of a ~360 ms one-shot `avatar -p native chat` (benchmarks/native.py, run with
    # and without), so it waits until the command has set up (`settled`).
    enabled = gc.isenabled()
    gc.disable()
    without_pydantic_plugins()
    inspect_when_used()
    keep_dataclass_code()  # (after `inspect_when_used`: it imports `dataclasses`)
    # A one-shot `chat` starts its agent, and it and `session list` run without click.
    from avatar.cli.early import run_plain
    from avatar.cli.state import discard_prebuilt

    status: object = 0
    try:
        run_plain(args)
        from avatar.cli.commands import run

        run(args)
    except SystemExit as done:  # (click ends every command so)
        status = done.code
    finally:
        discard_prebuilt()  # (the command ended before it took the agent started for it)
        if "avatar.engine.from_memory" in sys.modules:
            from avatar.engine.from_memory import discard

            discard()  # (started from memory, and no engine took it)
        # And what is alive now dies with the process: no last walk over it at exit.
        settled(enable=enabled)
    if argv is None:  # (this process is the command: nothing of a caller runs after it)
        exit_now(status)
    raise SystemExit(status)


def _start_remembered(args: list[str]) -> None:
    """For a plain `avatar [-p NAME] chat PROMPT`, claude started from the launch the last one
    here remembered, before the rest of avatar loads (`avatar.engine.from_memory`)."""
    from avatar.cli.plain import asked_provider

    asked = asked_provider(args)
    if asked is not None:
        from avatar.engine.from_memory import start

        start(asked)


def _acp(args: list[str]) -> bool:
    """True for `avatar [global options] acp [options]`, not asking for help."""
    from avatar.server.client import command_words

    words = command_words(args)
    return words[:1] == ["acp"] and not {"-h", "--help"} & set(words)
