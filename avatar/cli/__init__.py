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
    import os

    # pydantic scans every installed distribution for plugins on first use (~25 ms); avatar
    # uses none, and start-up time is a feature of a CLI.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from avatar.cli.main import run

    run(args)
