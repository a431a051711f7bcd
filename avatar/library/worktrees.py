"""Git worktrees of avatar's own (`chat`/`repl --worktree [NAME]`, `/worktree`): one session
per worktree, so parallel sessions in one repository do not step on each other.

A worktree is made with `git worktree add` from the repository's HEAD, on a new branch
`avatar/NAME`, at `<git common dir>/avatar/worktrees/NAME`: inside the repository's git
directory, so it is never in the user's `git status` (no ignore file is touched), one place
for every worktree of the repository (a name is unique per repository), and it goes with the
repository. Uncommitted changes of the main worktree stay there. The session's project root
is the worktree, so the sandbox's write walls follow it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from avatar.core.errors import AvatarError, UsageError

#: Where a repository's avatar worktrees live, under its git common dir.
PLACE = ("avatar", "worktrees")
BRANCH_PREFIX = "avatar/"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Worktree:
    """One avatar worktree: its name, directory and branch."""

    name: str
    path: Path
    branch: str
    #: The checkout it was made from had uncommitted changes (they are not in the worktree).
    left_behind: bool = False

    def describe(self) -> str:
        """The line that says where a session runs."""
        line = f"worktree: {self.name} at {self.path} (branch {self.branch})"
        if self.left_behind:
            line += "; uncommitted changes of your checkout are not in it"
        return line


def check_name(name: str) -> str:
    """`name` when it can name a worktree and its branch; a usage error otherwise."""
    if not _NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise UsageError(
            f"--worktree: not a worktree name: {name!r} (letters, digits, '.', '_', '-')"
        )
    return name


def _git(cwd: Path, *args: str) -> tuple[bool, str]:
    from avatar.core.quick_run import quick_run  # (subprocess: not for a listing)

    out = quick_run(["git", "-C", str(cwd), *args], timeout=30)
    if out is None:
        raise AvatarError("--worktree: git could not be run")
    return out.returncode == 0, (out.stdout if out.returncode == 0 else out.stderr).strip()


def _last(said: str) -> str:
    return said.splitlines()[-1] if said else "no reason given"


def create(cwd: Path, name: str | None = None) -> Worktree:
    """A new worktree of the repository `cwd` is in, from its HEAD (`name`: a generated one
    when None). Usage errors: not a repository, no commit yet, a name in use."""
    name = check_name(name) if name else "wt-" + os.urandom(3).hex()
    ok, common = _git(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if not ok:
        raise UsageError(f"--worktree: {cwd} is not in a git repository")
    if not _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")[0]:
        raise UsageError("--worktree: the repository has no commit to start a worktree from")
    path = Path(common).resolve().joinpath(*PLACE, name)
    branch = BRANCH_PREFIX + name
    if path.exists() or _git(cwd, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")[0]:
        raise UsageError(f"--worktree: the name {name!r} is in use ({path}, branch {branch})")
    ok, said = _git(cwd, "worktree", "add", "--quiet", "-b", branch, str(path), "HEAD")
    if not ok:
        raise AvatarError(f"--worktree: git worktree add failed: {_last(said)}")
    ok, changed = _git(cwd, "status", "--porcelain", "--untracked-files=no")
    return Worktree(name, path, branch, left_behind=ok and changed != "")


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


def remove(path: Path) -> str:
    """Remove the worktree at `path` (its uncommitted changes with it) and its branch when
    that holds no commit of its own; a line saying what was done."""
    gitdir = git_dir(path)
    if gitdir is None:
        return f"worktree {path} was already gone"
    branch = _git(path, "symbolic-ref", "--quiet", "--short", "HEAD")[1]
    main = gitdir.parent.parent  # <common>/worktrees/<id> -> <common>
    ok, said = _git(main, "worktree", "remove", "--force", str(path))
    if not ok:
        raise AvatarError(f"cannot remove worktree {path}: {_last(said)}")
    if branch.startswith(BRANCH_PREFIX) and _git(main, "branch", "-d", branch)[0]:
        return f"removed worktree {path} and its branch {branch}"
    return f"removed worktree {path} (branch {branch} kept: it has commits of its own)"
