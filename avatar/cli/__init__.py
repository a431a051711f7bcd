"""Command-line entry point. `avatar --version` and `avatar --help` answer before anything heavy
is imported."""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing`: see avatar/__init__.py

if TYPE_CHECKING:
    from collections.abc import Iterable


def main(argv: list[str] | None = None) -> None:
    """Run the `avatar` command."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from avatar import __version__

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
    import gc

    # Start-up creates the objects that live as long as the process (modules, classes,
    # validators); the collector walking them again and again while they are made costs
    # ~90 ms of a ~360 ms one-shot `avatar -p native chat` (benchmarks/native.py, run with
    # and without), so it waits until the command has set up (`settled`).
    enabled = gc.isenabled()
    gc.disable()
    without_pydantic_plugins()
    try:
        from avatar.cli.commands import run

        run(args)
    finally:
        # And what is alive now dies with the process: no last walk over it at exit.
        settled(enable=enabled)


def settled(*, enable: bool = True) -> None:
    """Start-up is over: keep what it built out of later collections, and collect again."""
    import gc

    gc.freeze()
    if enable:
        gc.enable()


# The pydantic versions (major, minor) whose plugin loader `without_pydantic_plugins` stands
# in for was checked against: tests/core/test_startup_pydantic.py fails when the installed
# pydantic is not one of them or its loader no longer looks as the stand-in assumes.
PYDANTIC_CHECKED = frozenset({(2, 14)})


def without_pydantic_plugins() -> None:
    """Answer pydantic's plugin question before it looks (avatar uses no pydantic plugins).

    When pydantic builds its first validator it asks `pydantic.plugin._loader.get_plugins()`,
    which imports `importlib.metadata` and scans every installed distribution for plugins:
    ~50 ms of each command. avatar puts in place of that module one whose `get_plugins()`
    answers what pydantic's own answers with `PYDANTIC_DISABLE_PLUGINS=__all__`: none. It
    checks pydantic's version on that first call, when pydantic is loaded anyway: on a
    version not in `PYDANTIC_CHECKED` it puts pydantic's own loader back and lets it answer.
    Nothing is set in the environment, so the agents and commands avatar runs see the user's.
    A user who set `PYDANTIC_DISABLE_PLUGINS` to anything but "all" gets pydantic's own loader.
    """
    import os

    name = "pydantic.plugin._loader"
    if os.environ.get("PYDANTIC_DISABLE_PLUGINS", "__all__") not in ("__all__", "1", "true"):
        return
    if name in sys.modules:
        return
    import types

    loader = types.ModuleType(name)

    def get_plugins() -> Iterable[object]:
        from pydantic.version import VERSION

        major, minor = (int(n) for n in VERSION.split(".")[:2])
        if (major, minor) in PYDANTIC_CHECKED:
            loader.get_plugins = tuple  # type: ignore[attr-defined]  # -> (): no plugins
            return ()
        if sys.modules.get(name) is loader:  # not a version checked: pydantic's own answers
            del sys.modules[name]
        from pydantic.plugin._loader import get_plugins as own

        loader.get_plugins = own  # type: ignore[attr-defined]
        return own()

    loader.get_plugins = get_plugins  # type: ignore[attr-defined]
    sys.modules[name] = loader
