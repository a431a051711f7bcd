"""The kernel as the wall behind the scope (docs/design.md §10): every command avatar runs and every
agent process it starts runs inside Landlock and private namespaces, entered by the exec stub
(`avatar.policy.kernel.stub`): avatar writes the walls into a `Spec`, the stub raises them and
execs the program.

Two kinds of walls, from one `ScopePolicy`:

- **commands** (the native `bash` tool, ACP terminals): reads only in the project, the added
  directories, the private temp dir, the system's read-only roots (`/usr`, `/etc` without its
  secrets, …), the install prefixes of the programs on `PATH` and `scope.read_outside`; writes
  only in the project, the added directories and the private temp dir; the network
  `scope.network` says. They get a scrubbed environment (`command_env`): no key avatar holds
  reaches a command. A command is the first process of its own PID namespace.
- **agents** (claude, codex-acp, gemini, claude-agent-acp, any ACP agent): reads as the user's;
  writes only in the project, the added directories, the private temp dir and the agent's own
  state directories (`state_dirs` in the provider data). An agent runs in a PID namespace under
  a small init (signals passed on, children reaped).

In both, paths the scope denies are covered by an empty read-only stand-in, protected paths
(`avatar.policy.protected`) are bound read-only onto themselves, the project's `.git` is pinned
so it cannot be swapped for another, Unix sockets outside the project are covered
(`avatar.policy.sockets`), and TIOCSTI/TIOCLINUX are refused (seccomp). An agent's project
config it may not use yet (`avatar.bridges.held_back`: `emptied`) is covered by an empty
stand-in it can read, so that the agent reads no config there rather than failing on a file it
may not open. Every process is watched by the guard (`policy.kernel.guard`) so it dies with
avatar. Where the kernel lacks Landlock or user namespaces, or no C compiler builds the stub,
`Sandbox.gaps` says what is left unprotected, once, for a notice.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from avatar.core.config import avatar_home, user_config_path
from avatar.policy import private_tmp, sockets
from avatar.policy.covered import CoveredTree, git_covers
from avatar.policy.kernel import landlock, stub
from avatar.policy.readable import (
    HOME_READABLE,
    SYSTEM_ROOTS,
    etc_around_secrets,
    etc_secrets,
    expand,
    program_prefixes,
)
from avatar.policy.scope import ScopePolicy
from avatar.policy.state import StateWalls, state_walls

Kind = Literal["commands", "agent"]
Network = Literal["on", "loopback", "off"]

#: The environment a sandboxed command keeps (docs/design.md §10): what programs need to run and to
#: format their output, never a credential. `TMPDIR` is set to the private temp dir.
COMMAND_ENV = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "COLORTERM",
        "TZ", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "COLUMNS", "LINES", "PAGER", "EDITOR",
        "VISUAL", "VIRTUAL_ENV", "PYTHONPATH", "NODE_PATH", "GOPATH", "JAVA_HOME",
    }
)  # fmt: skip
COMMAND_ENV_PREFIXES = ("LC_",)

#: Devices every sandboxed process may write to.
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/pts", "/dev/shm",
                    "/dev/ptmx")  # fmt: skip


def command_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of `env` a sandboxed command gets (see `COMMAND_ENV`)."""
    return {k: v for k, v in env.items() if k in COMMAND_ENV or k.startswith(COMMAND_ENV_PREFIXES)}


@dataclass(frozen=True)
class Support:
    """What the kernel offers here: the Landlock ABI (0: none); private mount, PID and user
    namespaces; network namespaces; a seccomp filter; and, when the stub cannot be built, why
    not (`unbuilt`)."""

    landlock_abi: int
    namespaces: bool
    network: bool = False
    seccomp: bool = False
    unbuilt: str | None = None

    @property
    def walls(self) -> bool:
        """Can any process be confined at all?"""
        return self.landlock_abi > 0 and self.unbuilt is None


@cache
def support() -> Support:
    """What this machine's kernel offers, probed once (building the stub if need be): the
    stub's probe says it all, Landlock's ABI included (asked in Python only where there is no
    stub or its probe could not run: `ctypes` costs a cold one-shot ~1.5 ms)."""
    if sys.platform != "linux":
        return Support(0, False)
    unbuilt = stub.available()
    if unbuilt is not None:
        abi = landlock.abi_version()
        return Support(abi, False, unbuilt=unbuilt) if abi > 0 else Support(0, False)
    found = stub.probe()
    # (a probe that could not run says nothing of Landlock: the kernel is asked, so that a
    # failed probe never costs the walls Landlock alone can raise)
    abi = found.landlock if found.landlock is not None else landlock.abi_version()
    if abi <= 0:
        return Support(0, False)
    return Support(abi, found.namespaces, found.network, found.seccomp)


class Sandbox:
    """The walls for processes of one kind, for one session's scope.

    `spec()` prepares a spawn (rechecking the tree for new denied or protected paths) and
    returns the walls for the stub; `env()` is the environment to give the process."""

    def __init__(
        self,
        kind: Kind,
        root: Path,
        extra_roots: Sequence[Path] = (),
        deny: Sequence[str] = (),
        allow_protected: Sequence[str] = (),
        state_dirs: Sequence[Path] = (),
        read_outside: Sequence[Path] = (),
        home: Path | None = None,
        search_path: str = "",
        open_sockets: Sequence[str] = (),
        network: Network = "on",
        env: Mapping[str, str] | None = None,
        state: StateWalls | None = None,
        emptied: Sequence[Path] = (),
        tidy: Sequence[Path] = (),
    ) -> None:
        self.kind = kind
        self.root = Path(os.path.realpath(root))
        self.extra_roots = [Path(os.path.realpath(r)) for r in extra_roots]
        self.allow_protected = list(allow_protected)
        self.state_dirs = [Path(os.path.realpath(p)) for p in state_dirs]
        self.read_outside = [Path(os.path.realpath(p)) for p in read_outside]
        self.home = Path(os.path.realpath(home or Path.home()))
        self.search_path = search_path
        self.network: Network = network if kind == "commands" else "on"
        self.state = state or StateWalls()
        #: Covered by an empty, readable stand-in (a file or a directory).
        self.emptied = [Path(p) for p in emptied]
        #: Directories made for the walls, removed by `close()` when left empty.
        self.tidy = list(tidy)
        self._trees = [
            CoveredTree(r, deny, allow_protected) for r in (self.root, *self.extra_roots)
        ]
        self._env = dict(os.environ if env is None else env)
        self._opened, self._socket_env = sockets.opened(open_sockets, self._env)
        self._socket_dirs: list[Path] | None = None
        self._tmp: Path | None = None
        self._lock: int | None = None

    # -- what the kernel can do ------------------------------------------------------------

    @property
    def gaps(self) -> str | None:
        """What stays unprotected on this machine, for a one-line notice; None when the walls
        are whole."""
        found = support()
        if not found.walls:
            why = found.unbuilt or "the kernel offers no Landlock here"
            return f"{why}: commands and agents are confined only by avatar's own checks"
        missing = []
        if not found.namespaces:
            missing.append(
                "protected and denied paths inside the project, Unix sockets, and other "
                "processes' environments (no user namespaces)"
            )
        if found.landlock_abi < 2:
            missing.append("renames across directories")
        if found.landlock_abi < 3:
            missing.append("truncation of files outside the walls")
        if not found.seccomp:
            missing.append("keystrokes pushed into a terminal (no seccomp)")
        if self.network != "on" and not found.network:
            if found.landlock_abi >= 4:
                missing.append("UDP (scope.network: only TCP is refused, loopback included)")
            else:
                missing.append(f"the network (scope.network: {self.network})")
        if not missing:
            return None
        return "the kernel's walls here do not cover " + ", ".join(missing)

    # -- the private temp dir ---------------------------------------------------------------

    def adopt_tmp(self, tmp: Path, lock: int) -> None:
        """Take `tmp` (and the descriptor holding its lock) as this sandbox's private temp
        dir: one made for a process started before these walls were computed
        (`avatar.bridges.claude.remembered`)."""
        if self._tmp is not None:
            raise ValueError("this sandbox has its temp dir already")
        self._tmp, self._lock = tmp, lock

    @property
    def tmpdir(self) -> Path:
        """This sandbox's private temp dir (made on first use, removed by `close()`; one left
        by an avatar that was killed is removed when the next one makes its own)."""
        if self._tmp is None:
            self._tmp, self._lock = private_tmp.make(self.kind)
        return self._tmp

    def started(self) -> None:
        """A process has started inside these walls: what `close()` takes is loaded now,
        while it boots (its end is when avatar waits)."""
        if self._tmp is not None:
            private_tmp.load_removal()

    def close(self) -> None:
        """Remove the private temp dir, and each directory of `tidy` left empty."""
        for made in self.tidy:
            with contextlib.suppress(OSError):
                made.rmdir()  # (only when empty)
        if self._tmp is not None:
            private_tmp.remove(self._tmp)
            self._tmp = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The environment a process of this kind starts with: commands get `command_env`
        (and the variables naming the sockets `scope.sockets` opens); both get `TMPDIR` in the
        private temp dir."""
        out = {**command_env(env), **self._socket_env} if self.kind == "commands" else dict(env)
        out["TMPDIR"] = str(self.tmpdir / "tmp")
        return out

    # -- the walls ----------------------------------------------------------------------------

    def _writable(self, tmp: Path | None = None) -> list[Path]:
        paths = [self.root, *self.extra_roots, tmp or self.tmpdir / "tmp"]
        if self.kind == "agent":
            paths += self.state_dirs
        return paths + [Path(d) for d in WRITABLE_DEVICES]

    def lets_write(self, path: Path) -> bool:
        """Do these walls let a process write at `path` (in a place they open for writing;
        what is covered read-only inside one aside)?"""
        real = Path(os.path.realpath(path))
        # (The private temp dir is not made for this question.)
        roots = self._writable(self._tmp or self.root)
        return any(real.is_relative_to(p) for p in roots)

    def _readable(self) -> list[Path]:
        paths = [self.root, *self.extra_roots, self.tmpdir, *self.read_outside]
        paths += [Path(p) for p in SYSTEM_ROOTS]
        # `/etc` whole when its secrets can be covered in the mount namespace, else entry by
        # entry around them (Landlock allows by path).
        paths += [Path("/etc")] if support().namespaces else etc_around_secrets()
        paths += [self.home / name for name in HOME_READABLE]
        # (Not the private temp dir: new for each sandbox, it would defeat the cache, and no
        # PATH names it before it exists.)
        writable = (self.root, *self.extra_roots, *self.state_dirs)
        paths += program_prefixes(self.search_path, self.home, writable)
        return paths

    def _covered(self) -> tuple[list[Path], list[Path], list[Path]]:
        """(hidden, read-only, pinned) paths for the next child."""
        hidden: list[Path] = etc_secrets() if self.kind == "commands" else []
        read_only: list[Path] = []
        for tree in self._trees:
            h, r = tree.refresh()
            hidden += h
            read_only += r
        pinned, git_read_only = git_covers(self.root, self.allow_protected)
        read_only += git_read_only
        if self.kind == "agent":  # (commands cannot write the state dirs at all)
            writable = self._writable()
            inside = [p for p in self.state.read_only if any(p.is_relative_to(w) for w in writable)]
            read_only += inside
            hidden += self.state.hidden
            pinned += self.state.opened
        # What avatar, outside the walls, reads and acts on is never writable inside them: its
        # config, its stub and its data dir (the trust store, the providers' copy, the launch
        # a one-shot starts claude from before anything checks it: a project holding it, `~`
        # say, would otherwise let an agent choose what the next avatar runs, and where).
        data = Path(os.path.realpath(avatar_home()))
        for own in (Path(os.path.realpath(user_config_path())), stub.executable(), data):
            if own.exists() and any(own.is_relative_to(w) for w in self._writable()):
                read_only.append(own)
        return list(dict.fromkeys(hidden)), list(dict.fromkeys(read_only)), pinned

    def _covered_socket_dirs(self) -> list[Path]:
        if self._socket_dirs is None:
            kept = [self.root, *self.extra_roots, self.tmpdir, *self.state_dirs]
            found = sockets.socket_dirs(self._env)
            self._socket_dirs = sockets.to_cover(found, kept, self.home)
        return self._socket_dirs

    def spec(self) -> stub.Spec:
        """The walls for the next child, as the stub takes them (the tree checked again for new
        denied or protected paths)."""
        found = support()
        for made in self.tidy:  # (removed by a `close()` before this spawn)
            with contextlib.suppress(OSError):
                made.mkdir(mode=0o700, parents=True, exist_ok=True)
        commands = self.kind == "commands"
        handled = (landlock.READ | landlock.WRITE) if commands else landlock.WRITE
        handled &= landlock.known_rights(found.landlock_abi)
        scopes = landlock.SCOPES if found.landlock_abi >= 6 else 0
        net = 0
        if self.network != "on" and not found.network and found.landlock_abi >= 4:
            net = landlock.TCP  # no network namespace here: at least no TCP at all
        rules = [(landlock.WRITE | landlock.READ, p) for p in self._writable()]
        if commands:
            rules += [(landlock.READ, p) for p in self._readable()]
        spec = stub.Spec(
            deathsig=int(signal.SIGKILL if commands else signal.SIGTERM),
            landlock=(handled, net, scopes),
            rules=rules,
            seccomp=found.seccomp,
        )
        if found.namespaces:
            hidden, read_only, pinned = self._covered()
            tmp = self.tmpdir
            spec.mounts = True
            spec.pid = "command" if commands else "init"
            spec.blanks = (tmp / ".blank", tmp / ".blank.d")
            spec.empties = (tmp / ".empty", tmp / ".empty.d")
            spec.hidden, spec.read_only, spec.pinned = hidden, read_only, pinned
            spec.emptied = [p for p in self.emptied if p.exists()]
            spec.scan_sockets = True
            spec.socket_dirs = self._covered_socket_dirs()
            spec.opened = list(self._opened)
            spec.kept = [self.root, *self.extra_roots, tmp]
            if self.network != "on" and found.network:
                spec.network = self.network
        return spec


@contextlib.contextmanager
def entered(
    sandbox: Sandbox | None,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    deathsig: int = 0,
) -> Iterator[stub.Entry]:
    """How to start `argv` (with `env`, in `cwd`) inside `sandbox`'s walls: the stub's argv and
    the descriptor to pass it (closed when the block ends). Without walls, `deathsig` still
    asks the kernel to signal the process when avatar dies, through the stub when it is
    built. A missing or unrunnable program raises FileNotFoundError / PermissionError here."""
    with stub.entered(walls_spec(sandbox, argv, env, cwd, deathsig=deathsig), argv) as entry:
        yield entry


def walls_spec(
    sandbox: Sandbox | None,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    deathsig: int = 0,
) -> stub.Spec | None:
    """What the stub is given to start `argv` inside `sandbox`'s walls (`entered`); None: the
    program runs without the stub."""
    stub.resolve(argv[0], env.get("PATH", os.defpath), cwd)
    if sandbox is not None and support().walls:
        return sandbox.spec()
    if deathsig and stub.available() is None:
        return stub.Spec(deathsig=deathsig)
    return None


def state_dirs(
    entries: Iterable[str],
    env: Mapping[str, str],
    *,
    guessed: bool = False,
    make: bool = True,
    made: list[Path] | None = None,
) -> list[Path]:
    """A provider's state paths (`state_dirs` in its data); an entry naming an unset variable
    is left out, and so is a guessed one that may not be opened (`avatar.policy.homes.keep`).
    An entry ending in `/` is a directory, made (0700) when missing unless not to `make`:
    Landlock can only allow what exists, and the agent would make it on its first run; `made`
    collects the directories made."""
    from avatar.policy import homes

    out = []
    for entry in entries:
        path = expand(entry, env)
        if path is None or (guessed and not homes.keep(path, env)):
            continue
        if make and entry.endswith("/") and not path.exists():
            try:
                path.mkdir(mode=0o700, parents=True)
            except OSError:
                pass
            else:
                if made is not None:
                    made.append(path)
        out.append(path)
    return out


def for_commands(
    policy: ScopePolicy,
    env: Mapping[str, str],
    agent_state: Iterable[str] = (),
    guessed: bool = False,
) -> Sandbox | None:
    """The walls for the commands of a session under `policy` (None with `sandbox: off`);
    `agent_state` is the `state_dirs` of the agent they run for (`guessed`: avatar's guess),
    which its commands cannot write but it can (the agent's walls make them, not these)."""
    if policy.sandbox_mode == "off":
        return None
    states = state_dirs(agent_state, env, guessed=guessed, make=False)
    return _sandbox("commands", policy, env, states)


def for_agent(
    policy: ScopePolicy,
    entries: Iterable[str],
    env: Mapping[str, str],
    protected: Iterable[str] = (),
    projects: Mapping[str, str] | None = None,
    emptied: Sequence[Path] = (),
    guessed: bool = False,
) -> Sandbox | None:
    """The walls for an agent process whose state lives in `entries` (`state_dirs` of its
    provider data), of which `protected` and other projects' entries in `projects` stay out of
    its reach (`state_protected`, `state_projects`: `avatar.policy.state`), with `emptied` (its
    project config held back) under empty stand-ins; None unless `sandbox: agents`. Guessed
    homes (`guessed`: `avatar.policy.homes`) made for it are removed again when it left them
    empty (`Sandbox.close`): a guess leaves nothing behind."""
    if policy.sandbox_mode != "agents":
        return None
    made: list[Path] = []
    states = state_dirs(entries, env, guessed=guessed, made=made)
    walls = state_walls(protected, projects or {}, env, policy.root)
    return _sandbox("agent", policy, env, states, walls, emptied, made if guessed else [])


def _sandbox(
    kind: Kind,
    policy: ScopePolicy,
    env: Mapping[str, str],
    states: Sequence[Path],
    walls: StateWalls | None = None,
    emptied: Sequence[Path] = (),
    tidy: Sequence[Path] = (),
) -> Sandbox:
    home = Path(env["HOME"]) if env.get("HOME") else None
    outside = [p for p in (expand(e, env) for e in policy.read_outside) if p is not None]
    return Sandbox(
        kind,
        policy.root,
        policy.extra_roots,
        deny=policy.deny_patterns,
        allow_protected=policy.allow_protected,
        state_dirs=states,
        read_outside=outside,
        home=home,
        search_path=env.get("PATH", os.defpath),
        open_sockets=policy.sockets,
        network=policy.network,
        env=env,
        state=walls,
        emptied=emptied,
        tidy=tidy,
    )


def walls(mode: str, transport: str, state: Sequence[str] = (), guessed: bool = False) -> str:
    """What the kernel confines for a provider, in a word for `avatar providers` and `/status`:
    `agent` (the agent's process and all it runs), `commands` (the commands avatar runs for
    it), `off` (`scope.sandbox: off`) or `unavailable` (no Landlock here; `unavailable (no C
    compiler)` where the stub cannot be built); `(partial)` is added
    where the kernel covers only part (`Sandbox.gaps`), `(no state_dirs)` for a walled agent
    given no place of its own outside the project (`state_dirs` in its provider entry),
    `(guessed state_dirs)` for one whose places are avatar's guess (`avatar.policy.homes`)."""
    if mode == "off":
        return "off"
    found = support()
    if not found.walls:
        return f"unavailable ({found.unbuilt})" if found.unbuilt else "unavailable"
    agent = mode == "agents" and transport != "native"
    word = "agent" if agent else "commands"
    if not (found.namespaces and found.landlock_abi >= 3):
        word += " (partial)"
    if agent and not state:
        return f"{word} (no state_dirs)"
    return f"{word} (guessed state_dirs)" if agent and guessed else word


def notices(mode: str) -> list[str]:
    """What a session should be told about its walls, once: what stays unprotected here."""
    if mode == "off":
        return []
    found = support()
    if found.unbuilt:
        return [
            f"sandbox: {found.unbuilt} to build avatar's sandbox stub; commands and agents are "
            f"confined only by avatar's own checks ({stub.INSTALL_HINT})"
        ]
    if not found.walls:
        return [
            "sandbox: the kernel offers no Landlock here; commands and agents are confined only "
            "by avatar's own checks"
        ]
    gaps = Sandbox("commands", Path.cwd()).gaps
    return [f"sandbox: {gaps}"] if gaps else []
