"""The exec stub that raises the walls (`stub.c` beside this file): avatar starts a walled
process as `avatar-stub SPECFD PROGRAM ARGS...`; the stub reads the walls (`Spec`) from the
inherited descriptor, enters them and execs the program. Nothing of Python runs between fork
and exec, so `subprocess` may use `vfork`, and no lock another thread held is inherited.

The stub is built on first use with the system's C compiler (`cc`, `gcc` or `clang` on
`PATH`, never from a directory inside the project), keyed by the hash of its source:

- beside this module, in `__pycache__/`, when the package's directory is writable: one build
  per checkout or install, shared by every HOME (the tests give each test its own). It is as
  trusted there as the `.pyc` files Python runs from the same directory, and a walled process
  can write it only where it can write avatar's own code;
- else in the user's cache dir (`$XDG_CACHE_HOME/avatar/`), which no wall lets a process write
  (the sandbox binds it read-only where it lies inside a writable root);
- `$AVATAR_STUB_DIR` instead of both when set (an install whose package directory is read-only
  and shared, say).

It is written under a temporary name and renamed into place, under a lock, so concurrent
avatars build it once. Where no compiler is found, `available()` says why and the walls are
`unavailable (no C compiler)`: avatar's own checks stand alone.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from avatar.core.fileio import held
from avatar.core.ids import sha256_hex
from avatar.core.which import which

SOURCE = Path(__file__).with_name("stub.c")
#: What a user without a compiler is told to do.
INSTALL_HINT = "install a C compiler (e.g. `apt install gcc`)"
_COMPILERS = ("cc", "gcc", "clang")


class StubError(Exception):
    """The stub cannot be built here (no compiler, or the build failed)."""


def _digest() -> str:
    text = SOURCE.read_bytes() + os.uname().machine.encode()  # (= platform.machine())
    return sha256_hex(text)[:16]


def _places() -> list[Path]:
    chosen = os.environ.get("AVATAR_STUB_DIR")
    if chosen and os.path.isabs(chosen):
        return [Path(chosen)]
    beside = SOURCE.parent / "__pycache__"
    xdg = os.environ.get("XDG_CACHE_HOME")
    cache_home = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return [beside, cache_home / "avatar"]


def compiler(avoid: Iterable[Path] = ()) -> str | None:
    """The C compiler on `PATH` (`cc`, `gcc`, `clang`), skipping relative entries and those
    beneath `avoid` (directories a walled process may write, such as an activated `.venv/bin`
    inside the project: a `cc` planted there would run outside the walls)."""
    banned = [Path(os.path.realpath(p)) for p in avoid]
    dirs = []
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        real = Path(os.path.realpath(entry))
        if not any(real.is_relative_to(b) for b in banned):
            dirs.append(entry)
    for name in _COMPILERS:
        found = which(name, os.pathsep.join(dirs))
        if found:
            return found
    return None


def _build(target: Path, cc: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with held(target.parent / "avatar-stub.lock"):
        if target.exists():
            return  # another avatar built it meanwhile
        import tempfile

        fd, tmp = tempfile.mkstemp(prefix=".avatar-stub-", dir=target.parent)
        os.close(fd)
        try:
            run = subprocess.run(
                [cc, "-O2", "-o", tmp, str(SOURCE)],
                capture_output=True,
                text=True,
                timeout=120,
                env={"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C"},
            )
            if run.returncode != 0:
                first = (run.stderr.strip().splitlines() or ["no output"])[0]
                raise StubError(f"the C compiler {cc} failed to build the stub: {first}")
            os.chmod(tmp, 0o755)
            os.rename(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def _built() -> Path | None:
    """The stub, where it is built already."""
    name = f"avatar-stub-{_digest()}"
    return next((p / name for p in _places() if (p / name).is_file()), None)


@cache
def executable() -> Path:
    """The built stub (built now if needed); StubError when it cannot be."""
    if sys.platform != "linux":
        raise StubError("the sandbox stub is for Linux")
    built = _built()
    if built is not None:
        return built
    name = f"avatar-stub-{_digest()}"
    places = _places()
    # Not from a PATH directory inside the project avatar runs in (an activated `.venv/bin`).
    cwd = Path.cwd()
    cc = compiler([cwd] if cwd != Path(cwd.anchor) else [])
    if cc is None:
        raise StubError("no C compiler")
    for place in places:
        with contextlib.suppress(OSError):
            if place.is_dir() or os.access(place.parent, os.W_OK):
                _build(place / name, cc)
                return place / name
    raise StubError("no writable place to build the stub in")


def available() -> str | None:
    """None when the stub runs here; else why not (for `unavailable (…)` and a notice)."""
    try:
        executable()
    except StubError as e:
        return str(e)
    except OSError as e:
        return f"the stub could not be built: {e}"
    return None


@dataclass(frozen=True)
class Probe:
    """What the kernel lets the stub do here (`landlock`: the Landlock ABI it offers, 0 for
    none; None when the probe could not say)."""

    landlock: int | None = None
    namespaces: bool = False
    network: bool = False
    seccomp: bool = False


#: The probe `probe_soon` started, until `probe()` reads its answer; and whether it did.
_probing: subprocess.Popen[str] | None = None
_probed = False


def probe_soon() -> None:
    """Start the probe now, where the stub is built already (nothing is built here), for
    `probe()` to find its answer ready: a one-shot starts it as it begins to load the walls,
    which the probe then runs beside (~3 ms, more under load: benchmarks/oneshot.py)."""
    global _probing
    if _probing is not None or _probed or sys.platform != "linux":
        return
    built = _built()
    if built is None:
        return
    with contextlib.suppress(OSError):
        _probing = _start_probe(built)


def _start_probe(stub: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(stub), "--probe"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@cache
def probe() -> Probe:
    """Ask the stub, once per process, what this kernel allows: Landlock (its ABI), private
    mount, PID and user namespaces, network namespaces, a seccomp filter (`probe_soon` may
    have asked it)."""
    global _probing, _probed
    started, _probing, _probed = _probing, None, True
    if available() is not None:
        if started is not None:
            started.kill()
            started.communicate()
        return Probe()
    try:
        proc = started or _start_probe(executable())
        try:
            out = proc.communicate(timeout=30)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    except (OSError, subprocess.SubprocessError):
        return Probe()
    found = dict(part.split("=", 1) for part in out.split() if "=" in part)
    abi = found.get("landlock", "")
    return Probe(
        int(abi) if abi.isdigit() else None,
        *(found.get(k) == "1" for k in ("namespaces", "network", "seccomp")),
    )


@dataclass
class Spec:
    """The walls of one process, as the stub reads them (see `stub.c` for the format)."""

    deathsig: int = 0
    mounts: bool = False
    pid: str = ""  # "", "command" or "init"
    network: str = ""  # "", "off" or "loopback"
    blanks: tuple[Path, Path] | None = None
    empties: tuple[Path, Path] | None = None
    pinned: list[Path] = field(default_factory=list)
    read_only: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    emptied: list[Path] = field(default_factory=list)
    socket_dirs: list[Path] = field(default_factory=list)
    opened: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    scan_sockets: bool = False
    landlock: tuple[int, int, int] | None = None  # handled fs, handled net, scopes
    rules: list[tuple[int, Path]] = field(default_factory=list)
    seccomp: bool = False

    def encode(self) -> bytes:
        """The spec as NUL-terminated fields."""
        fields: list[bytes | str | int | Path] = ["d", self.deathsig, "p", os.getpid()]
        if self.mounts:
            fields.append("m")
        if self.pid:
            fields += ["P", self.pid]
        if self.network:
            fields += ["N", self.network]
        if self.blanks:
            fields += ["f", *self.blanks]
        if self.empties:
            fields += ["F", *self.empties]
        # Parents first: a bind made over a directory afterwards would hide the mounts below it
        # (a path opened writable inside a read-only one, a stand-in inside it).
        binds = [("b", p) for p in self.pinned] + [("r", p) for p in self.read_only]
        binds += [("h", p) for p in self.hidden] + [("e", p) for p in self.emptied]
        for op, path in sorted(binds, key=lambda bind: len(bind[1].parts)):
            fields += [op, path]
        for op, paths in (
            ("c", self.socket_dirs),
            ("o", self.opened),
            ("k", self.kept),
        ):
            for path in paths:
                fields += [op, path]
        if self.scan_sockets:
            fields.append("s")
        if self.landlock:
            fields += ["L", *self.landlock]
            for rights, path in self.rules:
                fields += ["l", rights, path]
        if self.seccomp:
            fields.append("t")
        return b"".join(_field(f) + b"\0" for f in fields)


def _field(value: bytes | str | int | Path) -> bytes:
    if isinstance(value, bytes):
        out = value
    elif isinstance(value, Path):
        out = os.fsencode(value)
    else:
        out = str(value).encode()
    if b"\0" in out:
        raise ValueError("a path with a NUL byte")
    return out


@dataclass(frozen=True)
class Entry:
    """How to start a program inside its walls: the argv to run and the descriptor to pass."""

    argv: list[str]
    pass_fds: tuple[int, ...]


@contextlib.contextmanager
def entered(spec: Spec | bytes | None, argv: Sequence[str]) -> Iterator[Entry]:
    """The `Entry` that runs `argv` through the stub with `spec` (or the spec encoded; the
    program itself when no spec is given); the spec's descriptor is closed when the block
    ends (after the spawn)."""
    if spec is None:
        yield Entry(list(argv), ())
        return
    fd = os.memfd_create("avatar-walls", os.MFD_CLOEXEC)
    try:
        os.write(fd, spec.encode() if isinstance(spec, Spec) else spec)
        yield Entry([str(executable()), str(fd), *argv], (fd,))
    finally:
        os.close(fd)


def resolve(program: str, path: str, cwd: Path) -> str:
    """`program` as the stub will exec it, checked now: FileNotFoundError or PermissionError
    here, as `subprocess` would raise, rather than a failed exec inside the walls."""
    if "/" in program:
        full = cwd / program
        if not full.exists():
            raise FileNotFoundError(2, "No such file or directory", program)
        if full.is_dir() or not os.access(full, os.X_OK):
            raise PermissionError(13, "Permission denied", program)
        return program
    found = which(program, path)
    if found is None:
        raise FileNotFoundError(2, "No such file or directory", program)
    return found
