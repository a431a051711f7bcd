"""Putting a checkpoint back in place (docs/design.md §12): the project's files as they were,
file by file from the store, with the files added since removed; ignored files never touched;
the tree never left half-restored.

The tree as it is now is recorded first (a checkpoint of its own, under the same lock), so
what differs is known exactly and nothing is lost. Then, in two steps:
1. every file to write is staged beside its place (`.NAME.avatar-rewind~`, directories made
   where missing); a failure here removes what was staged and made, and nothing else moved;
2. the files added since are removed (and the directories they leave empty), and the staged
   files renamed into place. A failure here puts every path touched back as it was recorded
   a moment ago, then says so.

avatar runs this outside the walls, in a tree agents write: every path is opened beneath the
project's descriptor with no symlink followed (`avatar.core.beneath`), a file is replaced by a
rename in its directory (never written through a link), and a path the store names is checked
(no `..`, no `.git`) before it is used. A path that is not in the tree as recorded now but is
on disk (git ignores it) is left alone, and said.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from avatar.core.beneath import open_beneath, open_root, parts
from avatar.core.fileio import write_all
from avatar.library.checkpoints.store import CheckpointError, Entry, FileStore

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_STAGED = ".{}.avatar-rewind~"


@dataclass
class Restored:
    """What a restore did: files `written` and `removed`, those `left` alone (git ignores
    them now, so they are not avatar's to replace), and `before`, the checkpoint of the tree
    as it was just before (a rewind can be undone from it)."""

    before: str
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line saying what changed on disk."""
        if not self.written and not self.removed:
            said = "rewind: no file to restore (they are as they were)"
        else:
            said = f"rewind: {_files(len(self.written))} restored, {len(self.removed)} removed"
        if self.left:
            shown = ", ".join(self.left[:3]) + (" …" if len(self.left) > 3 else "")
            said += f"; left alone (ignored now): {shown}"
        return said


def _files(n: int) -> str:
    return f"{n} file" + ("" if n == 1 else "s")


def _checked(path: str) -> list[str]:
    """`path`'s components, refused when they step out or into a git directory (a store is
    avatar's own, but nothing restored may land in a `.git`)."""
    try:
        names = parts(path)
    except ValueError as e:
        raise CheckpointError(f"the checkpoint names a path that cannot be restored: {e}") from None
    if not names or any(n.lower() == ".git" for n in names):
        raise CheckpointError(f"the checkpoint names a path that cannot be restored: {path!r}")
    return names


class _Tree:
    """The project's directory tree, reached beneath its root descriptor only."""

    def __init__(self, root_fd: int) -> None:
        self.root = root_fd
        self.made: list[str] = []  # directories made, in the order made

    def dir(self, names: list[str], make: bool) -> int:
        """A descriptor of directory `names` (made where missing with `make`)."""
        fd = os.dup(self.root)
        try:
            for i, name in enumerate(names):
                if make:
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                        self.made.append("/".join(names[: i + 1]))
                    except FileExistsError:
                        pass
                step = open_beneath(fd, name, _DIR)
                os.close(fd)
                fd = step
            return fd
        except BaseException:
            os.close(fd)
            raise

    def kind(self, names: list[str]) -> int | None:
        """The file type bits of `names` (not followed), None when nothing is there."""
        try:
            fd = self.dir(names[:-1], make=False)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno in (errno.ENOTDIR, errno.ELOOP):
                return stat.S_IFREG  # (a file or a link where a directory would be)
            raise
        try:
            return stat.S_IFMT(os.stat(names[-1], dir_fd=fd, follow_symlinks=False).st_mode)
        except FileNotFoundError:
            return None
        finally:
            os.close(fd)

    def stage(self, names: list[str], entry: Entry, data: bytes) -> None:
        """`data` written as `entry` says beside `names`, under the staged name."""
        fd = self.dir(names[:-1], make=True)
        try:
            staged = _STAGED.format(names[-1])
            with contextlib.suppress(FileNotFoundError):
                os.unlink(staged, dir_fd=fd)
            if entry.mode == "120000":
                os.symlink(os.fsdecode(data), staged, dir_fd=fd)
                return
            perm = 0o755 if entry.mode == "100755" else 0o644
            with contextlib.suppress(OSError):  # (a file replaced keeps its permissions)
                old = os.stat(names[-1], dir_fd=fd, follow_symlinks=False)
                if stat.S_ISREG(old.st_mode):
                    perm = stat.S_IMODE(old.st_mode) & ~0o111
                    perm |= (perm & 0o444) >> 2 if entry.mode == "100755" else 0
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            out = os.open(staged, flags, perm, dir_fd=fd)
            try:
                write_all(out, data)
                os.fchmod(out, perm)
            finally:
                os.close(out)
        finally:
            os.close(fd)

    def place(self, names: list[str]) -> None:
        """The staged file renamed over `names`."""
        fd = self.dir(names[:-1], make=False)
        try:
            os.rename(_STAGED.format(names[-1]), names[-1], src_dir_fd=fd, dst_dir_fd=fd)
        finally:
            os.close(fd)

    def unstage(self, names: list[str]) -> None:
        """Remove what `stage` left for `names`, if anything."""
        with contextlib.suppress(OSError):
            fd = self.dir(names[:-1], make=False)
            try:
                os.unlink(_STAGED.format(names[-1]), dir_fd=fd)
            finally:
                os.close(fd)

    def remove(self, names: list[str]) -> None:
        """Remove file (or link) `names`; gone already is fine."""
        try:
            fd = self.dir(names[:-1], make=False)
        except FileNotFoundError:
            return
        try:
            os.unlink(names[-1], dir_fd=fd)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    def prune(self, dirs: list[str]) -> None:
        """Remove each of `dirs` that is empty, deepest first (a directory holding anything,
        ignored files too, stays)."""
        for rel in sorted(set(dirs), key=lambda d: d.count("/"), reverse=True):
            names = rel.split("/")
            with contextlib.suppress(OSError):
                fd = self.dir(names[:-1], make=False)
                try:
                    os.rmdir(names[-1], dir_fd=fd)
                finally:
                    os.close(fd)


def _parents(path: str) -> list[str]:
    return [p.as_posix() for p in PurePosixPath(path).parents if p.as_posix() != "."]


def restore(store: FileStore, target: str, exclude: list[str]) -> Restored:
    """Put checkpoint `target` back in `store`'s project; see the module docstring."""
    with store.locked():
        before = store.record_locked(exclude, whole=True)
        now, wanted = store.tree(before), store.tree(target)
        writes = {p: e for p, e in wanted.items() if now.get(p) != e}
        removes = sorted((p for p in now if p not in wanted), key=lambda p: -p.count("/"))
        names = {p: _checked(p) for p in (*writes, *removes)}
        data = store.blobs(e.blob for e in writes.values())
        done = Restored(before)
        root = open_root(store.project)
        try:
            tree = _Tree(root)
            staged, later = _stage(tree, writes, data, names, now, done)
            try:
                _commit(tree, staged, later, removes, writes, data, names, done)
            except (OSError, CheckpointError) as e:
                _roll_back(store, tree, now, [*writes, *removes], names, done)
                raise CheckpointError(
                    f"the files could not be restored ({_why(e)}); they are as they were"
                ) from None
        finally:
            os.close(root)
        return done


def _stage(
    tree: _Tree,
    writes: dict[str, Entry],
    data: dict[str, bytes],
    names: dict[str, list[str]],
    now: dict[str, Entry],
    done: Restored,
) -> tuple[list[str], list[str]]:
    """Step 1: stage what can be staged now; (staged, to write after the removals)."""
    staged: list[str] = []
    later: list[str] = []
    try:
        for path, entry in writes.items():
            if _blocked(tree, names[path]):
                later.append(path)  # (a file or link where a directory goes: removed first)
                continue
            there = tree.kind(names[path]) if path not in now else None
            if there == stat.S_IFDIR:
                later.append(path)  # (the directory's recorded files go first)
            elif there is not None:
                done.left.append(path)  # on disk, not recorded: git ignores it
            else:
                tree.stage(names[path], entry, data[entry.blob])
                staged.append(path)
    except OSError as e:
        for path in staged:
            tree.unstage(names[path])
        tree.prune(tree.made)
        raise CheckpointError(
            f"the files could not be restored ({_why(e)}); nothing changed"
        ) from None
    return staged, later


def _blocked(tree: _Tree, names: list[str]) -> bool:
    """True when a file or link stands where a directory of `names` goes."""
    for i in range(1, len(names)):
        kind = tree.kind(names[:i])
        if kind is None:
            return False
        if kind != stat.S_IFDIR:
            return True
    return False


def _commit(
    tree: _Tree,
    staged: list[str],
    later: list[str],
    removes: list[str],
    writes: dict[str, Entry],
    data: dict[str, bytes],
    names: dict[str, list[str]],
    done: Restored,
) -> None:
    """Step 2: the removals, then every staged file into place, then what had to wait."""
    for path in removes:
        tree.remove(names[path])
        done.removed.append(path)
    tree.prune([d for p in removes for d in _parents(p)])
    for path in staged:
        tree.place(names[path])
        done.written.append(path)
    for path in later:
        kind = tree.kind(names[path])
        if kind == stat.S_IFDIR:
            raise CheckpointError(f"{path} is a directory holding files git ignores")
        if kind is not None:
            done.left.append(path)
            continue
        tree.stage(names[path], writes[path], data[writes[path].blob])
        tree.place(names[path])
        done.written.append(path)


def _roll_back(
    store: FileStore,
    tree: _Tree,
    now: dict[str, Entry],
    touched: list[str],
    names: dict[str, list[str]],
    done: Restored,
) -> None:
    """Every path a failed step 2 may have touched, back as recorded just before."""
    kept = {p: now[p] for p in touched if p in now}
    data = store.blobs(e.blob for e in kept.values())
    failed: list[str] = []
    for path in touched:
        tree.unstage(names[path])
    for path in done.written:
        if path not in now:  # (added by this restore)
            with contextlib.suppress(OSError):
                tree.remove(names[path])
    for path, entry in kept.items():
        try:
            tree.stage(names[path], entry, data[entry.blob])
            tree.place(names[path])
        except OSError:
            tree.unstage(names[path])
            failed.append(path)
    tree.prune([*tree.made, *(d for p in done.written if p not in now for d in _parents(p))])
    if failed:
        shown = ", ".join(failed[:5]) + (" …" if len(failed) > 5 else "")
        raise CheckpointError(
            f"the files could not be restored, nor all put back ({shown}): the tree as it was "
            f"is checkpoint {done.before} of {store.git_dir}"
        )
    done.written.clear()
    done.removed.clear()


def _why(e: BaseException) -> str:
    if isinstance(e, OSError):
        where = f" at {e.filename}" if e.filename else ""
        return f"{e.strerror or e}{where}"
    return str(e)
