"""A cold one-shot's claude, started from the launch remembered from the last one in the same
place, before the config, the providers and the walls' code load (docs/startup.md).

The launch of claude (`ClaudeLaunch`: its command line, environment and walls) is computed
from the config files, the trust store, the providers' table, the project's agent config, the
program on `PATH`, the environment and the working directory; computing it means loading most
of avatar (~20 ms), during which claude has not started. So each plain `avatar [-p NAME] chat
PROMPT` that started claude remembers what it started it with and from what: a file in
avatar's cache naming each input file with its signature (inode, size, and both times: a
rewrite, a rename or a `touch` back changes one), a digest of the environment (of a variable
named as a secret's, its name only), the kernel's boot and avatar's version. The next one in
that directory starts claude from it at once when every input is as it was (`start`), and only
then; the engine still computes the launch as always and adopts that claude only if it would
have started exactly the same (`take`, `avatar.bridges.spawning.adopt`), else stops it, before
any prompt is written.

What it may not decide from memory, it never remembers: a launch that holds back part of the
project's agent config (its files decide, and their trust), with MCP values in its
environment, with `--trust`, or holding anything the secret detector finds (no secret is
written to avatar's cache). Loaded before the rest of avatar: the standard library and
avatar's cheapest modules only.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from avatar.core import quickjson
from avatar.core.fileio import atomic_write
from avatar.core.ids import new_uuid, sha256_hex
from avatar.core.version import __version__
from avatar.policy.kernel.guard import end_group, start_group
from avatar.policy.secret_names import is_secret_name

TYPE_CHECKING = False  # (only mypy needs `typing` here)
if TYPE_CHECKING:
    from typing import Any

#: The format of the file; another is never read.
FORMAT = 1
#: Stand-ins, in what is remembered, for what changes with every start.
SESSION, PID, TMP = "\x01session", "\x01pid", "\x01tmp"

Signature = list[int] | None


class Early:
    """A claude started from memory, until the engine adopts it or stops it."""

    def __init__(
        self,
        provider: str,
        popen: subprocess.Popen[bytes],
        session: str,
        tmp: str,
        lock: int,
        argv: list[str],
        env: dict[str, str],
        spec: bytes | None,
        cwd: str,
    ) -> None:
        self.provider = provider
        self.popen = popen
        self.session = session
        self.tmp = tmp
        self.lock = lock
        #: What it was started with: the program's argv (not the stub's), its environment,
        #: the walls as the stub read them, and where.
        self.argv = argv
        self.env = env
        self.spec = spec
        self.cwd = cwd

    def stop(self) -> None:
        """End it (its whole group) and release its pipes; its temp dir stays with whoever
        took it (`take`), else is left for the next start's sweep."""
        end_group(self.popen)


_early: Early | None = None


def take(provider: str) -> Early | None:
    """The claude started from memory for `provider`'s launch, once (one started for another
    provider is stopped)."""
    global _early
    early, _early = _early, None
    if early is not None and provider != early.provider:
        early.stop()
        return None
    return early


def discard() -> None:
    """Stop one nobody took."""
    global _early
    early, _early = _early, None
    if early is not None:
        early.stop()
        os.close(early.lock)


# ----- what is remembered ---------------------------------------------------------------------


def signature(path: str) -> Signature:
    """What changes when the file at `path` does: None for nothing there."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode]


def environment_digest(environ: Mapping[str, str]) -> str:
    """One digest of every variable, its name and value: any change is another environment.
    Of one whose name says it holds a secret, the name only: nothing derived from a secret is
    written, and the claude started from memory takes its values from the environment it
    starts in, not from the record."""
    return sha256_hex(
        "\0".join(k if is_secret_name(k) else f"{k}={v}" for k, v in sorted(environ.items()))
    )


def boot_id() -> str:
    """This boot of the kernel (what it allows is probed once per process: a reboot may
    change it)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def place(home: str | Path, cwd: str | Path, asked: str) -> str:
    """The file remembering the launch of `avatar [-p asked] chat` in `cwd`."""
    name = sha256_hex(f"{os.fspath(cwd)}\0{asked}")[:24]
    return os.path.join(os.fspath(home), "cache", "launches", f"{name}.json")


def remember(
    home: Path,
    asked: str,
    cwd: Path,
    inputs: Iterable[str],
    argv: Sequence[str],
    env: Mapping[str, str],
    spec: bytes | None,
    stub: str | None,
    tmp: str,
    *,
    provider: str,
) -> None:
    """Keep what claude was started with (`argv` ending with its session id, `env`, the walls
    `spec` as sent to `stub`, the private temp dir `tmp` inside them) and the signatures of
    the `inputs` it was computed from, for the next `avatar [-p asked] chat` in `cwd`."""
    session = argv[argv.index("--session-id") + 1]
    environ = os.environ
    changed = {k: _held(v, tmp) for k, v in env.items() if environ.get(k) != v}
    record = {
        "format": FORMAT,
        "version": __version__,
        "boot": boot_id(),
        "environ": environment_digest(environ),
        "cwd": os.fspath(cwd),
        "asked": asked,
        "provider": provider,
        "inputs": [[path, signature(path)] for path in sorted(set(inputs))],
        "argv": [SESSION if a == session else a for a in argv],
        "env": changed,
        "unset": sorted(k for k in environ if k not in env),
        "spec": None if spec is None else _placeheld(spec, tmp),
        "stub": stub,
    }
    path = Path(place(home, cwd, asked))
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        atomic_write(path, quickjson.dumps(record).encode())


def forget(home: Path, asked: str, cwd: Path) -> None:
    """Drop what is remembered for `avatar [-p asked] chat` in `cwd`."""
    with contextlib.suppress(OSError):
        os.unlink(place(home, cwd, asked))


def _placeheld(spec: bytes, tmp: str) -> str:
    fields = spec.split(b"\0")
    at = fields.index(b"p")  # (the stub checks its parent is the avatar that sent the spec)
    fields[at + 1] = PID.encode()
    return _held(b"\0".join(fields).decode("latin-1"), tmp)


def _held(text: str, tmp: str) -> str:
    return text.replace(tmp, TMP) if tmp else text


# ----- starting from it ------------------------------------------------------------------------


def start(home: str, cwd: str, asked: str) -> None:
    """Start claude now from what is remembered for `avatar [-p asked] chat` in `cwd`, when
    every input is as it was; nothing otherwise (the engine then starts it as always)."""
    global _early
    record = _valid(place(home, cwd, asked), cwd, asked)
    if record is None:
        return
    from avatar.policy import private_tmp  # (pathlib, fcntl: the walls' temp dir)

    made, lock = private_tmp.make("agent")
    tmp = os.fspath(made)
    session = new_uuid()
    argv = [session if a == SESSION else a for a in record["argv"]]
    unset = set(record["unset"])
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update({k: v.replace(TMP, tmp) for k, v in record["env"].items()})
    spec: bytes | None = None
    entry: list[str] = list(argv)
    fds: tuple[int, ...] = ()
    if record["spec"] is not None:
        text = record["spec"].replace(TMP, tmp).replace(PID, str(os.getpid()))
        spec = text.encode("latin-1")
        fd = os.memfd_create("avatar-walls", os.MFD_CLOEXEC)
        os.write(fd, spec)
        entry, fds = [record["stub"], str(fd), *argv], (fd,)
    try:
        popen = start_group(entry, env, cwd, fds)
    except OSError:
        private_tmp.remove(made)
        os.close(lock)
        return
    finally:
        for fd in fds:
            os.close(fd)
    _early = Early(record["provider"], popen, session, tmp, lock, argv, env, spec, cwd)


def _valid(path: str, cwd: str, asked: str) -> dict[str, Any] | None:
    """The record at `path` when it holds for this start: the same avatar, kernel boot,
    environment and place, and every input file as it was."""
    try:
        with open(path, encoding="utf-8") as f:
            record = quickjson.loads(f.read())
    except (OSError, ValueError):
        return None
    try:
        same = (
            record["format"] == FORMAT
            and record["version"] == __version__
            and record["cwd"] == cwd
            and record["asked"] == asked
            and record["environ"] == environment_digest(os.environ)
            and record["boot"] == boot_id()
            and all(signature(p) == sig for p, sig in record["inputs"])
        )
    except (KeyError, TypeError, ValueError, OSError):
        return None
    return record if same else None
