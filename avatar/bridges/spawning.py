"""Starting an agent's process, without the event loop: its own process group, exactly the
environment given (with the Node pinned beside it first on PATH), inside the kernel's walls
(entered by the exec stub, `avatar.policy.kernel.stub`), watched by the guard so that it dies
with avatar. `AgentProcess.adopt`
then reads and writes it from the loop; a one-shot starts its agent this way before the rest of
avatar loads (`Engine.launch_ahead`), so that the two overlap.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import ProviderError
from avatar.policy.kernel import stub
from avatar.policy.kernel.guard import end_group, guard, start_group
from avatar.policy.sandbox import walls_spec

if TYPE_CHECKING:
    from avatar.bridges.claude.remembered import Early
    from avatar.policy.sandbox import Sandbox


@dataclass
class Spawned:
    """A started agent process and the walls it runs in (closed when it is stopped), and what
    it was started with: the environment and the walls as the stub read them (None: no stub)."""

    popen: subprocess.Popen[bytes]
    sandbox: Sandbox | None
    env: dict[str, str] = field(default_factory=dict)
    spec: bytes | None = None


def spawn(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    install_hint: str = "",
    sandbox: Sandbox | None = None,
) -> Spawned:
    """Start `argv` with exactly `env` (inside `sandbox`'s walls when given), its three
    streams pipes; a missing or unrunnable program is a ProviderError."""
    if not cwd.is_dir():
        raise ProviderError(f"{name}: working directory {cwd} does not exist")
    env = started_env(argv[0], env, sandbox)
    try:
        # The kernel SIGTERMs the agent when avatar dies: its own process group keeps it from a
        # terminal's Ctrl-C, and an agent that ignores its stdin closing (Claude Code mid-turn)
        # would otherwise outlive an avatar killed with SIGKILL until the guard ends it.
        spec = walls_spec(sandbox, argv, env, cwd, deathsig=signal.SIGTERM)
        sent = spec.encode() if spec is not None else None
        with stub.entered(sent, argv) as entry:
            popen = start_group(entry.argv, env, str(cwd), entry.pass_fds)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
        hint = f" (install: {install_hint})" if install_hint else ""
        raise ProviderError(f"{name}: cannot run {argv[0]}: {e.strerror or e}{hint}") from None
    except OSError as e:
        raise ProviderError(f"{name}: cannot start {argv[0]}: {e}") from None
    guard().watch(popen.pid)
    if sandbox is not None:
        sandbox.started()
    return Spawned(popen, sandbox, env, sent)


def adopt(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, sandbox: Sandbox | None, early: Early
) -> Spawned | None:
    """`early` (a claude started from memory, before these walls were computed) as the agent
    `spawn` would start now, when it was started exactly so: the same argv, environment,
    directory and walls; else it is stopped at once (None: start one as always)."""
    if sandbox is not None:
        sandbox.adopt_tmp(Path(early.tmp), early.lock)
    else:
        os.close(early.lock)  # (its temp dir is then nobody's: swept by the next start)
    env = started_env(argv[0], env, sandbox)
    try:
        spec = walls_spec(sandbox, argv, env, cwd, deathsig=signal.SIGTERM)
    except OSError:
        spec = None
    sent = spec.encode() if spec is not None else None
    same = (list(argv), env, str(cwd), sent) == (early.argv, early.env, early.cwd, early.spec)
    if not same or early.popen.poll() is not None:
        early.stop()
        return None
    guard().watch(early.popen.pid)
    if sandbox is not None:
        sandbox.started()
    return Spawned(early.popen, sandbox, env, sent)


def started_env(program: str, env: Mapping[str, str], sandbox: Sandbox | None) -> dict[str, str]:
    """The environment `program` is started with inside `sandbox` (`spawn`)."""
    out = with_bundled_node(program, env)
    return sandbox.env(out) if sandbox else out


def kill(spawned: Spawned) -> None:
    """End a spawned agent that was never adopted: its whole group, at once."""
    end_group(spawned.popen)
    guard().release(spawned.popen.pid)
    if spawned.sandbox is not None:
        spawned.sandbox.close()


def with_bundled_node(program: str, env: Mapping[str, str]) -> dict[str, str]:
    """`env`, with the Node of the program's own `node_modules/.bin` first on PATH when it
    ships one: the agents pinned in `bridges/` need a newer Node than a machine may have, and
    their `#!/usr/bin/env node` must find the pinned one."""
    out = dict(env)
    bin_dir = Path(program).parent
    if bin_dir.name == ".bin" and (bin_dir / "node").is_file():
        out["PATH"] = f"{bin_dir}{os.pathsep}{out.get('PATH', '')}"
    return out
