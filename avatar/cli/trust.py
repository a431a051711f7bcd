"""`avatar trust [--show | --revoke] [DIR]`: trust the project's `.avatar.yaml` (docs/design.md
§10).

A project file nobody trusted applies without the keys that run programs or widen what agents
may touch (`avatar.policy.trust` lists them). `avatar trust` records the SHA-256 of the file's
bytes, so the whole file applies until it changes; `--show` says where the file is, whether it
is trusted and what applies only once it is; `--revoke` forgets it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.cli.state import AppState

_STATES = {
    "trusted": "yes",
    "user": "yes (it is your user config)",
    "changed": "no (it changed since it was trusted)",
    "untrusted": "no",
}


@click.command("trust")
@click.argument("directory", metavar="[DIR]", required=False, type=click.Path(path_type=Path))
@click.option("--show", is_flag=True, help="Show the file, whether it is trusted, what it sets.")
@click.option("--revoke", is_flag=True, help="Stop trusting the file.")
@click.pass_obj
def trust_command(state: AppState, directory: Path | None, show: bool, revoke: bool) -> int:
    """Trust the project's .avatar.yaml: its commands and scope apply (until it changes)."""
    from avatar.engine.engine import Engine

    if show and revoke:
        raise UsageError("use either --show or --revoke")
    where = state.cwd / directory if directory is not None else state.cwd
    if not where.is_dir():
        raise UsageError(f"no such directory: {directory}")
    project = Engine.project_config(where, config_file=state.config)
    if project is None:
        if show:
            sys.stdout.write(f"no .avatar.yaml in {where} or a parent up to the home directory\n")
            return 0
        raise UsageError(f"no .avatar.yaml in {where} or a parent up to the home directory")
    if show:
        sys.stdout.write(f"{project.path}\ntrusted: {_STATES[project.state]}\n")
        if project.guarded:
            sys.stdout.write("applies only when trusted:\n")
            for key, value in project.guarded.items():
                sys.stdout.write(f"  {key}: {json.dumps(value)}\n")
        else:
            sys.stdout.write("nothing in it needs trust\n")
        return 0
    if revoke:
        done = project.revoke()
        sys.stdout.write(f"{'revoked' if done else 'was not trusted'}: {project.path}\n")
        return 0
    if project.state == "user":
        sys.stdout.write(f"{project.path} is your user config: always trusted\n")
        return 0
    project.trust()
    sys.stdout.write(f"trusted: {project.path}\n")
    return 0
