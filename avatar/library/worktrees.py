"""Git worktrees of avatar's own (`chat`/`repl --worktree [NAME]`, `/worktree`): one session
per worktree, so parallel sessions in one repository do not step on each other.

A worktree is made with `git worktree add` from the repository's HEAD, on a new branch
`avatar/NAME`, at `<git common dir>/avatar/worktrees/NAME`: inside the repository's git
directory, so it is never in the user's `git status` (no ignore file is touched), one place
for every worktree of the repository (a name is unique per repository), and it goes with the
repository. Uncommitted changes of the main worktree stay there. The submodules your checkout
has initialised are initialised in it, from your checkout's copies
(`avatar.library.worktree_modules`). The session's project root is the worktree, so the
sandbox's write walls follow it.

Two avatars making or removing worktrees of one repository take turns (`turn`): git's own
`worktree add` reads every other worktree's files, and one that finds a file another has
created but not yet written fails ("failed to read …/commondir").

Removing a worktree never loses work: with uncommitted changes (untracked files included; what
git ignores is not work), or commits of a submodule that only it holds, it is refused, saying
what and how (commit them on its branch, or `discard` them). avatar commits nothing itself:
`git commit` runs the repository's hooks, which the agent may have written (a
`.pre-commit-config.yaml`), outside the walls, and would commit what nobody looked at.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from avatar.core.errors import AvatarError, UsageError
from avatar.core.fileio import held
from avatar.library import worktree_modules
from avatar.library.worktree_modules import git as _git
from avatar.library.worktree_modules import last_line as _last
from avatar.library.worktree_place import PLACE, git_dir

BRANCH_PREFIX = "avatar/"
#: How long a worktree's making or removal waits for another avatar's (`turn`).
TURN_WAIT = 120.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Worktree:
    """One avatar worktree: its name, directory and branch."""

    name: str
    path: Path
    branch: str
    #: The checkout it was made from had uncommitted changes (they are not in the worktree).
    left_behind: bool = False
    #: Submodules initialised in that checkout that could not be here, and why.
    empty_submodules: tuple[str, ...] = ()

    def describe(self) -> str:
        """The line that says where a session runs."""
        line = f"worktree: {self.name} at {self.path} (branch {self.branch})"
        if self.left_behind:
            line += "; uncommitted changes of your checkout are not in it"
        return "; ".join([line, *self.empty_submodules])


def check_name(name: str) -> str:
    """`name` when it can name a worktree and its branch; a usage error otherwise."""
    if not _NAME.fullmatch(name) or ".." in name or name.endswith((".lock", ".")):
        raise UsageError(
            f"--worktree: not a worktree name: {name!r} (letters, digits, '.', '_', '-')"
        )
    return name


@contextlib.contextmanager
def turn(common: Path) -> Iterator[None]:
    """Hold the repository whose git common dir is `common` while a worktree of it is made or
    removed (another avatar doing the same waits, `TURN_WAIT` seconds at most)."""
    place = common.joinpath(*PLACE)
    place.mkdir(parents=True, exist_ok=True)
    try:
        with held(place.with_name("worktrees.lock"), wait=TURN_WAIT):
            yield
    except TimeoutError:
        raise AvatarError(
            f"--worktree: another avatar has been making or removing a worktree of {common} "
            f"for {TURN_WAIT:.0f} s; nothing was done, try again"
        ) from None


def create(cwd: Path, name: str | None = None) -> Worktree:
    """A new worktree of the repository `cwd` is in, from its HEAD (`name`: a generated one
    when None). Usage errors: not a repository, no commit yet, a name in use."""
    name = check_name(name) if name else "wt-" + os.urandom(3).hex()
    ok, common = _git(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if not ok:
        raise UsageError(f"--worktree: {cwd} is not in a git repository")
    if not _git(cwd, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")[0]:
        raise UsageError("--worktree: the repository has no commit to start a worktree from")
    common_dir = Path(common).resolve()
    path = common_dir.joinpath(*PLACE, name)
    branch = BRANCH_PREFIX + name
    with turn(common_dir):
        taken = _git(cwd, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")[0]
        if path.exists() or taken:
            raise UsageError(f"--worktree: the name {name!r} is in use ({path}, branch {branch})")
        ok, said = _git(cwd, "worktree", "add", "--quiet", "-b", branch, str(path), "HEAD")
    if not ok:
        raise AvatarError(f"--worktree: git worktree add failed: {_last(said)}")
    ok, changed = _git(cwd, "status", "--porcelain", "--untracked-files=no")
    source = Path(_git(cwd, "rev-parse", "--show-toplevel")[1])
    empty = tuple(worktree_modules.initialise(source, path))
    return Worktree(name, path, branch, left_behind=ok and changed != "", empty_submodules=empty)


def unsaved(path: Path) -> list[str]:
    """What removing the worktree at `path` would lose: its uncommitted changes and untracked
    files (as `git status --porcelain` names them, submodules' included), and its submodules'
    commits your checkout does not have."""
    if git_dir(path) is None:
        return []
    ok, said = _git(
        path, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none"
    )
    if not ok:
        raise AvatarError(f"cannot read the state of worktree {path}: {_last(said)}")
    lost = [line.strip() for line in said.splitlines()]
    return lost + worktree_modules.only_here(_main(path), path)


def refusal(path: Path, lost: list[str]) -> str:
    """The one line refusing to remove the worktree at `path` that holds `lost`."""
    shown = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
    return (
        f"--worktree: {path} holds work not committed ({shown}): commit it on its branch "
        f"(git -C {path} add -A && git -C {path} commit), or add --discard to throw it away; "
        "nothing was deleted"
    )


def _main(path: Path) -> Path:
    """The main worktree of the repository of the worktree at `path`."""
    said = _git(path, "worktree", "list", "--porcelain")[1]
    first = said.splitlines()[0] if said else ""
    return Path(first.removeprefix("worktree ")) if first.startswith("worktree ") else path


def remove(path: Path, discard: bool = False) -> str:
    """Remove the worktree at `path` and its branch when that holds no commit of its own; a
    line saying what was done. Refused (a UsageError, nothing removed) when it holds work not
    committed (`unsaved`), unless `discard`: then that is thrown away, and said."""
    gitdir = git_dir(path)
    if gitdir is None:
        return f"worktree {path} was already gone"
    main = gitdir.parent.parent  # <common>/worktrees/<id> -> <common>
    with turn(main):  # (`unsaved` asks `git worktree list`, which reads every worktree too)
        lost = unsaved(path)
        if lost and not discard:
            raise UsageError(refusal(path, lost))
        branch = _git(path, "symbolic-ref", "--quiet", "--short", "HEAD")[1]
        # `--force`: what it would keep is thrown away on purpose, or there is none (git
        # refuses a worktree with submodules without it, whatever they hold).
        force = ["--force"] if lost or (gitdir / "modules").is_dir() else []
        ok, said = _git(main, "worktree", "remove", *force, str(path))
        if not ok:
            raise AvatarError(f"cannot remove worktree {path}: {_last(said)}")
        dropped = branch.startswith(BRANCH_PREFIX) and _git(main, "branch", "-d", branch)[0]
    thrown = f"; threw away its work not committed ({len(lost)})" if lost else ""
    if dropped:
        return f"removed worktree {path} and its branch {branch}{thrown}"
    return f"removed worktree {path} (branch {branch} kept: it has commits of its own){thrown}"
