"""The project's files as git trees in a store of avatar's own (docs/design.md §12).

One store per project, under `$AVATAR_HOME/rewind/projects/<key>/`: a bare git directory and an
index of its own, never the project's `.git` (which is not read, written or even run: git is
told `--git-dir` and `--work-tree`, so no config, hook or fsmonitor of the project's runs).
Recording is `git add -A` into that index (the index's stat cache makes an unchanged tree
cheap: benchmarks/checkpoints.py) and `write-tree`, kept reachable by a commit chained on the
last one. What git ignores is left out: the `.gitignore` files of the tree, the project's own
`.git/info/exclude`, the user's global excludes, and the scope's denied paths (so a `.env`
agents may not read never lands where they could read it). Contents are kept byte for byte:
no filter, end-of-line or encoding conversion applies (`info/attributes` unsets them all).

Where the project is a directory inside a repository (below the home directory), the work tree
is the repository's top, with the project as the only path added, so the ignore files above
the project count too; paths stay relative to the project everywhere outside this module.

The store must be avatar's alone: agents never write it (their walls let them write only the
project, its added directories, a private temp dir and their own state: `writable_roots`
must not hold it, which `FileStore.check_outside` makes sure of before anything is recorded).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from avatar.core.fileio import atomic_write, held
from avatar.core.ids import sha256_hex
from avatar.library.checkpoints.git import CheckpointError as CheckpointError
from avatar.library.checkpoints.git import StoreGit

#: Git's own attributes unset for every path: what is stored is what is on disk, and what is
#: restored is what was stored.
ATTRIBUTES = b"* -text -eol -filter -ident -working-tree-encoding\n"
#: The store's git config: nothing configured by the user or the system that would run a
#: program or change bytes applies to it.
CONFIG = b"""\
[core]
\trepositoryformatversion = 0
\tbare = true
\tfilemode = true
\tsymlinks = true
\tignorecase = false
\tautocrlf = false
\tsafecrlf = false
\tfsmonitor = false
\tuntrackedCache = false
\thooksPath = /dev/null
[gc]
\tauto = 0
[advice]
\taddEmbeddedRepo = false
[commit]
\tgpgSign = false
"""
_REF = "refs/heads/checkpoints"
_GITLINK = "160000"
#: Below this much free space where avatar keeps its data, nothing is recorded: the room left
#: is the sessions' (a store that took the last of it would make the turn's own writes fail).
LOW_DISK = 64 * 1024 * 1024


@dataclass(frozen=True)
class Change:
    """One path that differs between two checkpoints: `status` is `A` (added), `M`
    (modified), `D` (deleted) or `T` (its kind changed); `added`/`removed` lines, None for a
    binary file."""

    path: str
    status: str
    added: int | None = None
    removed: int | None = None


@dataclass(frozen=True)
class Entry:
    """A path of a checkpoint's tree: its git mode (`100644`, `100755`, `120000`) and blob."""

    mode: str
    blob: str


def store_root(home: Path) -> Path:
    """Where every project's store lives."""
    return home / "rewind"


def project_top(project: Path) -> Path:
    """The work tree git should walk for `project`: the top of the repository it lies in (its
    ignore files count), not above the home directory; else the project itself."""
    home = Path(os.path.realpath(Path.home()))
    for d in (project, *project.parents):
        if d == home and d != project:
            break
        if (d / ".git").exists():
            return d
        if d == home:
            break
    return project


class FileStore:
    """The checkpoints of one project's files; see the module docstring."""

    def __init__(self, home: Path, project: Path) -> None:
        self.project = Path(os.path.realpath(project))
        self.root = store_root(home)
        self.dir = self.root / "projects" / sha256_hex(str(self.project))[:24]
        self.git_dir = self.dir / "git"
        self.top = project_top(self.project)
        rel = self.project.relative_to(self.top).as_posix()
        #: The project's path in the trees ("" when it is the work tree's top).
        self.prefix = "" if rel == "." else rel + "/"
        self.git = StoreGit(self.git_dir, self.dir / "index", self.top)

    # -- the walls ---------------------------------------------------------------------------

    def check_outside(self, writable: Iterable[Path]) -> None:
        """A `CheckpointError` when the store lies in (or holds) a place agents may write: an
        agent could plant a checkpoint avatar would restore, or a config its git would run."""
        mine = Path(os.path.realpath(self.root))
        for root in writable:
            real = Path(os.path.realpath(root))
            if mine.is_relative_to(real) or real.is_relative_to(mine):
                raise CheckpointError(
                    f"avatar's checkpoint store {mine} lies in {real}, which agents may write: "
                    "files are not recorded for rewind (set AVATAR_HOME elsewhere)"
                )

    # -- recording -----------------------------------------------------------------------------

    def record(self, exclude: Sequence[str] = ()) -> str:
        """Record the project's files as they are now (what git ignores and the `exclude`
        patterns left out); the checkpoint's id."""
        self._check_room()
        with self.locked():
            return self.record_locked(exclude)

    def _check_room(self) -> None:
        where = self.dir
        while not where.exists() and where != where.parent:
            where = where.parent
        try:
            found = os.statvfs(where)
        except OSError:
            return
        if found.f_bavail * found.f_frsize < LOW_DISK:
            raise CheckpointError(
                f"less than {LOW_DISK >> 20} MiB is free where avatar keeps its data ({where})"
            )

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store for one record or restore (another avatar on this project waits)."""
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        with held(self.dir / "lock"):
            yield

    def record_locked(self, exclude: Sequence[str] = (), *, whole: bool = False) -> str:
        """`record`, with the store held already; `whole`: every step, even where the index
        shows nothing changed (a restore asks what git ignores now, global excludes too)."""
        if not self.project.is_dir():
            raise CheckpointError(f"the project {self.project} is not a directory")
        fresh = self._prepare(exclude)
        # (1: some files could not be read; they keep what they were last recorded as)
        self.git.text("add", "-A", "--ignore-errors", "--", self.prefix or ".", ok=(0, 1))
        # An index git left as it was holds the tree recorded last: nothing to write (most
        # turns that only read and answer).
        last = self._last()
        if not (fresh or whole) and last is not None and last[0] == self._stamp():
            return last[1]
        # A file recorded once stays in an index even when ignored since: it goes, so that a
        # restore never touches it. (Asked while the tree is written: most often none is.)
        asking = self.git.start(["ls-files", "-ci", "--exclude-standard", "-z"])
        tree = self.git.text("write-tree").strip()
        ignored = self.git.finish(asking, "ls-files")
        if ignored:
            self.git.run(["rm", "--cached", "-q", "--pathspec-from-file=-",
                          "--pathspec-file-nul"], ignored)  # fmt: skip
            tree = self.git.text("write-tree").strip()
        commit = self._commit(tree)
        atomic_write(self.git_dir / _REF, (commit + "\n").encode())
        atomic_write(self.dir / "last", f"{self._stamp()} {commit}\n".encode())
        return commit

    def _stamp(self) -> str:
        """The index file as it is now (a rewrite is a new inode, time or size)."""
        try:
            st = os.stat(self.dir / "index")
        except OSError:
            return "-"
        return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"

    def _last(self) -> tuple[str, str] | None:
        """(the index's stamp, the checkpoint) as the last record left them."""
        try:
            stamp, commit = (self.dir / "last").read_text().split()
        except (OSError, ValueError):
            return None
        return stamp, commit

    def _commit(self, tree: str) -> str:
        """A commit of `tree` chained on the last checkpoint (so that every tree stays
        reachable), written as git writes a loose object: one process fewer per record."""
        parent = self._head()
        stamp = f"avatar <avatar@localhost> {int(time.time())} +0000"
        body = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "")
        body += f"author {stamp}\ncommitter {stamp}\n\ncheckpoint\n"
        raw = f"commit {len(body)}\0{body}".encode()
        commit = hashlib.sha1(raw, usedforsecurity=False).hexdigest()
        path = self.git_dir / "objects" / commit[:2] / commit[2:]
        if not path.exists():
            atomic_write(path, zlib.compress(raw), mode=0o444)
        return commit

    def _prepare(self, exclude: Sequence[str]) -> bool:
        """The store made on first use; its excludes brought up to date. True when either
        changed (what git leaves out may have)."""
        info = self.git_dir / "info"
        made = not (self.git_dir / "HEAD").is_file()
        if made:
            for d in ("objects", "refs/heads", "info"):
                (self.git_dir / d).mkdir(parents=True, exist_ok=True, mode=0o700)
            atomic_write(self.git_dir / "config", CONFIG)
            atomic_write(info / "attributes", ATTRIBUTES)
            atomic_write(self.dir / "project", (str(self.project) + "\n").encode())
            atomic_write(self.git_dir / "HEAD", f"ref: {_REF}\n".encode())
        wanted = self._excludes(exclude)
        with contextlib.suppress(OSError):
            if (info / "exclude").read_bytes() == wanted:
                return made
        atomic_write(info / "exclude", wanted)
        return True

    def _excludes(self, exclude: Sequence[str]) -> bytes:
        """The project's own `.git/info/exclude`, then the scope's patterns (anchored at the
        project, as the scope reads them)."""
        own = b""
        with contextlib.suppress(OSError):
            own = (self.top / ".git" / "info" / "exclude").read_bytes()
        lines = [own.decode("utf-8", "replace").rstrip("\n")] if own.strip() else []
        for pattern in exclude:
            pat = pattern.strip()
            while pat.startswith("./"):
                pat = "/" + pat[2:]
            if pat and "\n" not in pat:
                lines.append(f"/{self.prefix}{pat.lstrip('/')}" if pat.startswith("/") else pat)
        return ("\n".join(lines) + "\n").encode()

    def _head(self) -> str | None:
        try:
            return (self.git_dir / _REF).read_text().strip() or None
        except OSError:
            return None

    # -- reading -------------------------------------------------------------------------------

    def changes(self, old: str, new: str) -> list[Change]:
        """What differs from checkpoint `old` to checkpoint `new`, path by path (paths relative
        to the project)."""
        out = self.git.text(
            "diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
            "--raw", "--numstat", old, new, "--", self.prefix or ".",
        )  # fmt: skip
        status: dict[str, str] = {}
        lines: dict[str, tuple[int | None, int | None]] = {}
        tokens = iter(out.split("\0"))
        for token in tokens:
            if token.startswith(":"):
                meta, path = token.split(), next(tokens, "")
                if _GITLINK not in meta[:2]:
                    status[path] = meta[4][:1]
            elif token.count("\t") >= 2:
                added, removed, path = token.split("\t", 2)
                lines[path] = (_count(added), _count(removed))
        return [
            Change(self._rel(path), kind, *lines.get(path, (None, None)))
            for path, kind in status.items()
        ]

    def tree(self, commit: str) -> dict[str, Entry]:
        """Every file of checkpoint `commit` (nested repositories left out), by path relative
        to the project."""
        out = self.git.text("ls-tree", "-r", "-z", "--full-tree", commit)
        found: dict[str, Entry] = {}
        for record in out.split("\0"):
            if not record:
                continue
            meta, _, path = record.partition("\t")
            mode, _kind, blob = meta.split()
            if mode != _GITLINK and path.startswith(self.prefix):
                found[self._rel(path)] = Entry(mode, blob)
        return found

    def blobs(self, ids: Iterable[str]) -> dict[str, bytes]:
        """The contents of blobs `ids`, read in one `git cat-file --batch`."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        data = self.git.run(["cat-file", "--batch"], ("\n".join(wanted) + "\n").encode())
        out, at = {}, 0
        for blob in wanted:
            end = data.index(b"\n", at)
            head = data[at:end].split()
            if len(head) != 3:
                raise CheckpointError(f"the checkpoint store lacks {blob}: it is damaged")
            size = int(head[2])
            out[blob] = data[end + 1 : end + 1 + size]
            at = end + 2 + size
        return out

    def _rel(self, path: str) -> str:
        return path[len(self.prefix) :] if self.prefix and path.startswith(self.prefix) else path


def _count(text: str) -> int | None:
    return int(text) if text.isdigit() else None
