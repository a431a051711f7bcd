"""The project's uncommitted changes as `git diff --stat` shows them, for a handoff."""

from __future__ import annotations

from pathlib import Path

from avatar.core.quick_run import quick_run

_MAX_LINES = 40


def diff_stat(cwd: Path) -> str | None:
    """`git diff --stat HEAD` of the repository `cwd` is in (plus untracked files); None
    outside a repository, without git, or with nothing changed."""

    def git(*args: str) -> str | None:
        out = quick_run(["git", "-C", str(cwd), *args])
        return out.stdout if out is not None and out.returncode == 0 else None

    stat = git("diff", "--stat", "HEAD")
    if stat is None:  # not a repository, or one without a commit yet
        stat = git("diff", "--stat")
        if stat is None:
            return None
    untracked = git("ls-files", "--others", "--exclude-standard") or ""
    lines = [ln.rstrip() for ln in stat.splitlines() if ln.strip()]
    lines += [f" {name} (new, untracked)" for name in untracked.splitlines() if name.strip()]
    if not lines:
        return None
    if len(lines) > _MAX_LINES:
        lines = [*lines[: _MAX_LINES - 1], f" … {len(lines) - _MAX_LINES + 1} more"]
    return "\n".join(lines)
