"""`avatar session export` and `avatar session import`: a transcript as md/html/json, or the
session itself packed to carry to another machine or project (docs/design.md §3)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from avatar.core.errors import UsageError
from avatar.policy.terminal_text import for_terminal

if TYPE_CHECKING:
    from avatar.cli.state import AppState


@click.command("export")
@click.argument("session_id", metavar="ID")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "html", "json"]),
    help="Transcript format (default md).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to FILE instead of stdout.",
)
@click.option(
    "--archive",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Pack the session's own files (and avatar's records) into FILE.tar.gz instead, "
    "secrets masked inside them.",
)
@click.pass_obj
def export_command(
    state: AppState,
    session_id: str,
    fmt: str | None,
    output: Path | None,
    archive: Path | None,
) -> int:
    """A session's transcript as Markdown, HTML or JSON, or an archive of its files; secrets
    are masked in each."""
    if archive is not None and (fmt or output):
        raise UsageError("--archive writes its own file: leave out --format and -o")
    engine = state.engine()
    info = engine.find(session_id, state.provider)
    if archive is not None:
        engine.library.archives.pack(info, archive)
        sys.stderr.write(f"packed {info.provider} session {info.id} into {archive}\n")
        return 0
    if output is None:  # shown, at a terminal: made inert; piped, the export is data
        sys.stdout.write(for_terminal(engine.export(info, fmt or "md"), sys.stdout))
        return 0
    try:
        engine.export(info, fmt or "md", to=output)
    except OSError as e:
        raise UsageError(f"cannot write {output}: {e.strerror}") from None
    sys.stderr.write(f"exported {info.provider} session {info.id} to {output}\n")
    return 0


@click.command("import")
@click.argument("archive", metavar="FILE", type=click.Path(path_type=Path))
@click.option(
    "--cwd",
    "cwd",
    type=click.Path(path_type=Path),
    help="Project directory to restore the session under (default: this one).",
)
@click.pass_obj
def import_command(state: AppState, archive: Path, cwd: Path | None) -> int:
    """Restore a session archive into its provider's store here; prints the session id."""
    target = (state.cwd / cwd).resolve() if cwd is not None else state.cwd
    if not target.is_dir():
        raise UsageError(f"--cwd: no such directory: {cwd}")
    engine = state.engine()
    info = engine.library.archives.restore(archive, target)
    sys.stderr.write(f"imported {info.provider} session {info.id} into {target}\n")
    sys.stdout.write(info.id + "\n")
    return 0
