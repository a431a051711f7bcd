"""Where avatar's git worktrees live, whether a directory is one of them, and which a
repository has: all an engine and a listing need to know of worktrees (a cold one-shot
loads this before its agent starts, `session list` at every listing; making and removing
them is `avatar.library.worktrees`)."""

from __future__ import annotations

from pathlib import Path

#: Where a repository's avatar worktrees live, under its git common dir.
PLACE = ("avatar", "worktrees")


def git_dir(cwd: Path) -> Path | None:
    """The git directory of the worktree whose top is `cwd` (read from `.git`, no git run:
    listing stays fast); None when `cwd` is no worktree's top."""
    dot = cwd / ".git"
    if dot.is_dir():
        return dot
    try:
        text = dot.read_text()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return (cwd / text.removeprefix("gitdir:").strip()).resolve()


def avatar_worktree(cwd: Path) -> Path | None:
    """`cwd` when it is the top of one of avatar's worktrees (`avatar -C` into one): its
    sessions are that worktree's."""
    gitdir = git_dir(cwd)  # <common>/worktrees/<id> for a linked worktree
    if gitdir is None or gitdir.parent.name != "worktrees":
        return None
    return cwd if cwd.parent == gitdir.parent.parent.joinpath(*PLACE) else None


def of_repository(cwd: Path) -> list[Path]:
    """The avatar worktrees of the repository whose main worktree's top is `cwd` (none when
    `cwd` is not one)."""
    dot = cwd / ".git"
    if not dot.is_dir():
        return []
    place = dot.joinpath(*PLACE)
    try:
        return sorted(p for p in place.iterdir() if p.is_dir())
    except OSError:
        return []
