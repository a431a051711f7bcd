"""The kernel as the wall behind the scope (DESIGN §10): every command avatar runs and every agent
process it starts runs inside Landlock and a private mount namespace.

Two kinds of walls, from one `ScopePolicy`:

- **commands** (the native `bash` tool, ACP terminals): reads only in the project, the added
  directories, the private temp dir, the system's read-only roots (`/usr`, `/etc` without its
  secrets, …), the install prefixes of the programs on `PATH` and `scope.read_outside`; writes
  only in the project, the added directories and the private temp dir. They get a scrubbed
  environment (`command_env`): no key avatar holds reaches a command.
- **agents** (claude, codex-acp, gemini, claude-agent-acp, any ACP agent): reads as the user's;
  writes only in the project, the added directories, the private temp dir and the agent's own
  state directories (`state_dirs` in the provider data).

In both, paths the scope denies are covered by an empty read-only stand-in and protected paths
(`avatar.policy.protected`) are bound read-only onto themselves; the project's `.git` is pinned
so it cannot be swapped for another. An agent's project config it may not use yet
(`avatar.bridges.held_back`: `emptied`) is covered by an empty stand-in it can read, so that the
agent reads no config there rather than failing on a file it may not open. Every process is
watched by the guard (`policy.guard`) so it dies with avatar. Where the kernel lacks Landlock,
or user namespaces, `Sandbox.gaps` says what is left unprotected, once, for a notice.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from avatar.core.config import user_config_path
from avatar.policy.covered import CoveredTree
from avatar.policy.kernel import landlock, namespaces
from avatar.policy.protected import protected_by
from avatar.policy.readable import (
    HOME_READABLE,
    SYSTEM_ROOTS,
    etc_around_secrets,
    etc_secrets,
    expand,
    program_prefixes,
)
from avatar.policy.scope import ScopePolicy

Kind = Literal["commands", "agent"]

#: The environment a sandboxed command keeps (DESIGN §10): what programs need to run and to
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
# `.git` entries that are protected whether or not a walk finds them.
_GIT_PROTECTED = ("config", "config.worktree", "hooks", "modules", "worktrees")


def command_env(env: Mapping[str, str]) -> dict[str, str]:
    """The part of `env` a sandboxed command gets (see `COMMAND_ENV`)."""
    return {k: v for k, v in env.items() if k in COMMAND_ENV or k.startswith(COMMAND_ENV_PREFIXES)}


@dataclass(frozen=True)
class Support:
    """What the kernel offers here: the Landlock ABI (0: none) and private mount and PID
    namespaces."""

    landlock_abi: int
    namespaces: bool

    @property
    def walls(self) -> bool:
        """Can any process be confined at all?"""
        return self.landlock_abi > 0


@cache
def support() -> Support:
    """What this machine's kernel offers, probed once."""
    abi = landlock.abi_version()
    return Support(abi, abi > 0 and namespaces.available())


class Sandbox:
    """The walls for processes of one kind, for one session's scope.

    `preexec()` prepares a spawn (rechecking the tree for new denied or protected paths) and
    returns what the child runs between fork and exec; `env()` is the environment to give it."""

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
        emptied: Sequence[Path] = (),
    ) -> None:
        self.kind = kind
        self.root = Path(os.path.realpath(root))
        self.extra_roots = [Path(os.path.realpath(r)) for r in extra_roots]
        self.allow_protected = list(allow_protected)
        self.state_dirs = [Path(os.path.realpath(p)) for p in state_dirs]
        self.read_outside = [Path(os.path.realpath(p)) for p in read_outside]
        self.home = Path(os.path.realpath(home or Path.home()))
        self.search_path = search_path
        #: Covered by an empty, readable stand-in (a file or a directory).
        self.emptied = [Path(p) for p in emptied]
        self._trees = [
            CoveredTree(r, deny, allow_protected) for r in (self.root, *self.extra_roots)
        ]
        self._tmp: Path | None = None

    # -- what the kernel can do ------------------------------------------------------------

    @property
    def gaps(self) -> str | None:
        """What stays unprotected on this machine, for a one-line notice; None when the walls
        are whole."""
        found = support()
        if not found.walls:
            return (
                "the kernel offers no Landlock here: commands and agents are confined only by "
                "avatar's own checks, not by the kernel"
            )
        missing = []
        if not found.namespaces:
            missing.append(
                "protected and denied paths inside the project, and other processes' "
                "environments (no user namespaces)"
            )
        if found.landlock_abi < 2:
            missing.append("renames across directories")
        if found.landlock_abi < 3:
            missing.append("truncation of files outside the walls")
        if not missing:
            return None
        return "the kernel's walls here do not cover " + ", ".join(missing)

    # -- the private temp dir ---------------------------------------------------------------

    @property
    def tmpdir(self) -> Path:
        """This sandbox's private temp dir (made on first use, removed by `close()`)."""
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix=f"avatar-{self.kind}-"))
            blank = self._tmp / ".blank"
            blank.touch(mode=0)
            (self._tmp / ".blank.d").mkdir(mode=0)
            (self._tmp / ".empty").touch(mode=0o444)
            (self._tmp / ".empty.d").mkdir(mode=0o555)
            (self._tmp / "tmp").mkdir(mode=0o700)
        return self._tmp

    def close(self) -> None:
        """Remove the private temp dir."""
        if self._tmp is not None:
            for stand_in in (".blank.d", ".blank", ".empty.d"):
                os.chmod(self._tmp / stand_in, 0o700)
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """The environment a process of this kind starts with: commands get `command_env`;
        both get `TMPDIR` in the private temp dir."""
        out = command_env(env) if self.kind == "commands" else dict(env)
        out["TMPDIR"] = str(self.tmpdir / "tmp")
        return out

    # -- the walls ----------------------------------------------------------------------------

    def _writable(self) -> list[Path]:
        paths = [self.root, *self.extra_roots, self.tmpdir / "tmp"]
        if self.kind == "agent":
            paths += self.state_dirs
        return paths + [Path(d) for d in WRITABLE_DEVICES]

    def _readable(self) -> list[Path]:
        paths = [self.root, *self.extra_roots, self.tmpdir, *self.read_outside]
        paths += [Path(p) for p in SYSTEM_ROOTS]
        # `/etc` whole when its secrets can be covered in the mount namespace, else entry by
        # entry around them (Landlock allows by path).
        paths += [Path("/etc")] if support().namespaces else etc_around_secrets()
        paths += [self.home / name for name in HOME_READABLE]
        paths += program_prefixes(self.search_path, self.home)
        return paths

    def _covered(self) -> tuple[list[Path], list[Path], list[Path]]:
        """(hidden, read-only, pinned) paths for the next child."""
        hidden: list[Path] = etc_secrets() if self.kind == "commands" else []
        read_only: list[Path] = []
        for tree in self._trees:
            h, r = tree.refresh()
            hidden += h
            read_only += r
        pinned: list[Path] = []
        git = self.root / ".git"
        if git.is_dir() and not git.is_symlink():
            pinned.append(git)
            hooks = git / "hooks"
            if not hooks.exists() and protected_by(
                ".git/hooks", "write", True, self.allow_protected
            ):
                # A hooks directory the agent could create would run its hooks on the user's
                # next commit; an empty one, read-only, cannot be filled.
                hooks.mkdir(exist_ok=True)
            for name in _GIT_PROTECTED:
                path = git / name
                rel = f".git/{name}"
                if path.exists() and protected_by(
                    rel, "write", path.is_dir(), self.allow_protected
                ):
                    read_only.append(path)
        config = Path(os.path.realpath(user_config_path()))
        if config.is_file() and any(config.is_relative_to(w) for w in self._writable()):
            read_only.append(config)
        return hidden, read_only, pinned

    def preexec(self) -> Callable[[], None]:
        """Prepare the walls for one child; the returned function applies them in the child."""
        handled = landlock.WRITE if self.kind == "agent" else landlock.READ | landlock.WRITE
        rules = [landlock.Rule(p, landlock.WRITE | landlock.READ) for p in self._writable()]
        if self.kind == "commands":
            rules += [landlock.Rule(p, landlock.READ) for p in self._readable()]
        ruleset = landlock.Ruleset(handled, rules) if support().walls else None
        spaces: namespaces.Namespaces | None = None
        if support().namespaces:
            hidden, read_only, pinned = self._covered()
            tmp = self.tmpdir
            emptied = [
                (tmp / (".empty.d" if p.is_dir() else ".empty"), p)
                for p in self.emptied
                if p.exists()
            ]
            spaces = namespaces.Namespaces(
                read_only, hidden, tmp / ".blank", tmp / ".blank.d", pinned,
                pid=self.kind == "commands", stand_ins=emptied,
            )  # fmt: skip
        return _child(spaces, ruleset)


def _child(
    spaces: namespaces.Namespaces | None, ruleset: landlock.Ruleset | None
) -> Callable[[], None]:
    def apply() -> None:
        if spaces is not None:
            spaces.enter()
        if ruleset is not None:
            if spaces is not None and spaces.private_proc and ruleset.handled & landlock.READ_FILE:
                ruleset.allow_here(b"/proc", landlock.READ)  # the namespace's own /proc
            ruleset.restrict()

    return apply


def state_dirs(entries: Iterable[str], env: Mapping[str, str]) -> list[Path]:
    """A provider's state paths (`state_dirs` in its data); an entry naming an unset variable
    is left out. An entry ending in `/` is a directory, made (0700) when missing: Landlock can
    only allow what exists, and the agent would make it on its first run."""
    out = []
    for entry in entries:
        path = expand(entry, env)
        if path is None:
            continue
        if entry.endswith("/") and not path.exists():
            with contextlib.suppress(OSError):
                path.mkdir(mode=0o700, parents=True)
        out.append(path)
    return out


def for_commands(policy: ScopePolicy, env: Mapping[str, str]) -> Sandbox | None:
    """The walls for the commands of a session under `policy` (None with `sandbox: off`)."""
    if policy.sandbox_mode == "off":
        return None
    return _sandbox("commands", policy, env, ())


def for_agent(
    policy: ScopePolicy,
    entries: Iterable[str],
    env: Mapping[str, str],
    emptied: Sequence[Path] = (),
) -> Sandbox | None:
    """The walls for an agent process whose state lives in `entries` (`state_dirs` of its
    provider data), with `emptied` (its project config held back) under empty stand-ins;
    None unless `sandbox: agents`."""
    if policy.sandbox_mode != "agents":
        return None
    return _sandbox("agent", policy, env, state_dirs(entries, env), emptied)


def _sandbox(
    kind: Kind,
    policy: ScopePolicy,
    env: Mapping[str, str],
    states: Sequence[Path],
    emptied: Sequence[Path] = (),
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
        emptied=emptied,
    )


def walls(mode: str, transport: str, state: Sequence[str] = ()) -> str:
    """What the kernel confines for a provider, in a word for `avatar providers` and `/status`:
    `agent` (the agent's process and all it runs), `commands` (the commands avatar runs for
    it), `off` (`scope.sandbox: off`) or `unavailable` (no Landlock here); `(partial)` is added
    where the kernel covers only part (`Sandbox.gaps`), `(no state_dirs)` for a walled agent
    given no place of its own outside the project (`state_dirs` in its provider entry)."""
    if mode == "off":
        return "off"
    found = support()
    if not found.walls:
        return "unavailable"
    agent = mode == "agents" and transport != "native"
    word = "agent" if agent else "commands"
    if not (found.namespaces and found.landlock_abi >= 3):
        word += " (partial)"
    return f"{word} (no state_dirs)" if agent and not state else word


def notices(mode: str) -> list[str]:
    """What a session should be told about its walls, once: what stays unprotected here."""
    if mode == "off":
        return []
    found = support()
    if not found.walls:
        return [
            "sandbox: the kernel offers no Landlock here; commands and agents are confined only "
            "by avatar's own checks"
        ]
    gaps = Sandbox("commands", Path.cwd()).gaps
    return [f"sandbox: {gaps}"] if gaps else []
