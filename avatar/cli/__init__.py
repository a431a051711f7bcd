"""Command-line entry point. `avatar --version` answers before anything heavy is imported."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Run the `avatar` command."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from avatar import __version__

        sys.stdout.write(f"avatar {__version__}\n")
        raise SystemExit(0)
    import gc

    # Start-up creates the objects that live as long as the process (modules, classes,
    # validators); the collector walking them again and again while they are made costs
    # ~40 ms of a one-shot command, so it waits until the command has set up (`settled`).
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


def without_pydantic_plugins() -> None:
    """Tell pydantic there are no plugins before it looks (avatar uses none).

    pydantic scans every installed distribution for plugins when it builds its first
    validator (~25 ms), unless `PYDANTIC_DISABLE_PLUGINS` says not to; even then its plugin
    loader module imports `importlib.metadata` (~30 ms more). Start-up time is a feature of a
    CLI, so avatar sets the variable and, when plugins are off, puts in place of that module
    one whose `get_plugins()` gives the answer pydantic's own would give: none.
    """
    import os

    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    name = "pydantic.plugin._loader"
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] in ("__all__", "1", "true") and (
        name not in sys.modules
    ):
        import types

        loader = types.ModuleType(name)
        loader.get_plugins = tuple  # type: ignore[attr-defined]  # -> (): no plugins
        sys.modules[name] = loader
