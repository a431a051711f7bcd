"""An agent's own configuration in the project (docs/design.md §10): the files a repository carries
for Claude Code, codex, Gemini CLI and the other agents, which can make the agent run programs as it
starts (hooks, MCP servers, key helpers, status lines, notify commands, plugins, …).

Which files each agent reads is provider data (`project_config` in providers.toml): paths
relative to a directory, a trailing `/` for a directory (every file under it counts). They are
looked for in the agent's working directory and in each parent up to, not including, the home
directory (whose own such files are the user's: `~/.claude/settings.json` is Claude Code's user
settings). Each file found is judged by the SHA-256 of its bytes against the trust store
(`avatar.policy.trust.TrustStore`, the one `.avatar.yaml` is trusted in): until `avatar trust`
recorded those bytes, the file is held back and the agent starts without it (how:
`avatar.bridges.held_back`). A file that cannot be read whole (not a regular file, unreadable,
larger than `MAX_BYTES`) is never trusted, and neither is a directory with more than `MAX_FILES`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from avatar.policy.trust import TrustState, TrustStore

#: A file larger than this is never trusted (it is not read to be hashed).
MAX_BYTES = 4 * 2**20
#: A directory entry holding more files than this is never trusted as a whole.
MAX_FILES = 2000


@dataclass(frozen=True)
class ConfigFile:
    """One file of an agent's project config, found and judged."""

    path: Path  # where it was found (absolute)
    #: What a stand-in covers for it: the file itself, or the directory of a `/` entry.
    entry: Path
    digest: str | None  # the SHA-256 of its bytes; None: it cannot be read whole
    state: TrustState

    @property
    def real(self) -> Path:
        """The absolute real path the trust store knows it by."""
        return Path(os.path.realpath(self.path))

    @property
    def held(self) -> bool:
        """Not trusted as it is: the agent starts without it."""
        return self.state != "trusted"


@dataclass(frozen=True)
class HeldBack:
    """The files of one agent's project config that it starts without (none: it starts with
    everything)."""

    files: tuple[ConfigFile, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.files)

    @property
    def covered(self) -> list[Path]:
        """What stand-ins cover: each file, or the directory holding it, once."""
        return list(dict.fromkeys(f.entry for f in self.files))

    def names(self, cwd: Path) -> str:
        """The files, as the user knows them from `cwd`, in one phrase."""
        return ", ".join(
            shown(f.path, cwd) + (" (changed since trusted)" if f.state == "changed" else "")
            for f in self.files
        )

    def notice(self, provider: str, cwd: Path) -> str:
        """The one line saying what `provider` starts without, and how to trust it."""
        return (
            f"{provider} starts without the project's agent config {self.names(cwd)}: it is "
            "not trusted and can run programs; run `avatar trust` to use it (or --trust for "
            "this run)"
        )


def shown(path: Path, cwd: Path) -> str:
    """`path` relative to `cwd` when under it, else whole."""
    try:
        return os.fspath(path.relative_to(cwd))
    except ValueError:
        return os.fspath(path)


def directories(cwd: Path, home: Path | None = None) -> list[Path]:
    """Where an agent looks for its project config: `cwd` and each parent, up to and not
    including the home directory."""
    home_real = os.path.realpath(home if home is not None else Path.home())
    out: list[Path] = []
    for d in (cwd, *cwd.parents):
        if os.path.realpath(d) == home_real:
            break
        out.append(d)
    return out


def find(
    cwd: Path, entries: Iterable[str], home: Path | None = None
) -> Iterator[tuple[Path, Path]]:
    """(file, entry) for every file of `entries` (`project_config`) around `cwd`."""
    wanted = [(entry.rstrip("/"), entry.endswith("/")) for entry in entries]
    for d in directories(cwd, home):
        base = os.fspath(d)
        for name, is_dir in wanted:
            path = os.path.join(base, name)
            try:  # (one stat a candidate: this runs before every agent starts)
                mode = os.stat(path).st_mode
            except OSError:
                continue
            if is_dir and stat.S_ISDIR(mode):
                yield from ((f, Path(path)) for f in _walk(Path(path)))
            elif not is_dir and not stat.S_ISDIR(mode):
                yield Path(path), Path(path)


def _walk(root: Path) -> Iterator[Path]:
    """Every file under `root`, through symlinked directories (each real directory once); past
    `MAX_FILES`, `root` itself stands for the rest (it cannot be read whole: never trusted)."""
    seen: set[str] = set()
    count = 0
    for top, dirs, files in os.walk(root, followlinks=True):
        real = os.path.realpath(top)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        for name in sorted(files):
            count += 1
            if count > MAX_FILES:
                yield root
                return
            yield Path(top) / name


def read_whole(path: Path) -> bytes | None:
    """The bytes of a regular file of at most `MAX_BYTES`; None for anything else (a FIFO is
    not waited on, a device not read)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            size += len(chunk)
            if size > MAX_BYTES:  # it grew meanwhile
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def project_files(
    cwd: Path,
    entries: Iterable[str],
    store: TrustStore,
    home: Path | None = None,
    state: Callable[[], Iterable[Path]] = tuple,
) -> list[ConfigFile]:
    """Every file of `entries` around `cwd`, judged against `store`; none inside the agent's
    own `state` directories (asked for when a file is found: a `CODEX_HOME` in the project is
    codex's state, not config the repository brought)."""
    out: list[ConfigFile] = []
    records: dict[str, object] | None = None  # (read once, when a file is found)
    own: list[str] | None = None
    for path, entry in find(cwd, entries, home):
        own = [os.path.realpath(p) for p in state()] if own is None else own
        if any(_within(os.path.realpath(entry), d) for d in own):
            continue
        data = None if path == entry and path.is_dir() else read_whole(path)
        digest = TrustStore.digest(data) if data is not None else None
        real = Path(os.path.realpath(path))
        records = store.records() if records is None else records
        out.append(ConfigFile(path, entry, digest, store.judge(real, digest, records)))
    return out


def _within(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
