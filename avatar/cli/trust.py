"""`avatar trust [--show | --revoke] [DIR]`: trust the project's own config (docs/design.md
§10).

Two kinds of files in a repository can make avatar or its agents run programs: the project's
`.avatar.yaml`, which applies without the keys that run programs or widen what agents may touch
until trusted (`avatar.policy.trust` lists them), and each agent's own config in the project
(`project_config` in the provider data: Claude Code's project settings and `.mcp.json`, codex's
`.codex/`, Gemini CLI's `.gemini/`, …), which the agent starts without until trusted
(`avatar.bridges.held_back`). `avatar trust` records the SHA-256 of every such file's bytes, so
each applies until it changes; `--show` lists them, whether each is trusted and what it would
run; `--revoke` forgets them all (`avatar.engine.project_trust`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.cli.state import AppState


@click.command("trust")
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(path_type=Path))
@click.option("--show", is_flag=True, help="Show the files, whether trusted, what they run.")
@click.option("--revoke", is_flag=True, help="Stop trusting the files.")
@click.pass_obj
def trust_command(state: AppState, directory: Path | None, show: bool, revoke: bool) -> int:
    """Trust the project's .avatar.yaml and the agents' own config in it (until it changes)."""
    from avatar.engine.engine import Engine

    if show and revoke:
        raise UsageError("use either --show or --revoke")
    where = state.cwd / directory if directory is not None else state.cwd
    if not where.is_dir():
        raise UsageError(f"no such directory: {directory}")
    config = Engine.project_config(where, config_file=state.config)
    project = Engine.from_config(where, config_file=state.config).project_trust(config)
    if project.empty:
        nothing = (
            f"no .avatar.yaml in {where} or a parent up to the home directory, and no agent "
            "config of the project"
        )
        if show:
            sys.stdout.write(nothing + "\n")
            return 0
        raise UsageError(nothing)
    sys.stdout.write(project.show() if show else project.revoke() if revoke else project.trust())
    return 0
