"""Starting an agent's process, without the event loop: its own process group, exactly the
environment given (with the Node pinned beside it first on PATH), inside the kernel's walls
(entered by the exec stub, `avatar.policy.kernel.stub`), watched by the guard so that it dies
with avatar. `AgentProcess.adopt`
then reads and writes it from the loop; a one-shot starts its agent this way before the rest of
avatar loads (`Engine.launch_ahead`), so that the two overlap.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import ProviderError
from avatar.policy.kernel.guard import guard
from avatar.policy.sandbox import entered

if TYPE_CHECKING:
    from avatar.policy.sandbox import Sandbox


@dataclass
class Spawned:
    """A started agent process and the walls it runs in (closed when it is stopped)."""

    popen: subprocess.Popen[bytes]
    sandbox: Sandbox | None


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
    env = with_bundled_node(argv[0], env)
    env = sandbox.env(env) if sandbox else env
    try:
        # The kernel SIGTERMs the agent when avatar dies: its own process group keeps it from a
        # terminal's Ctrl-C, and an agent that ignores its stdin closing (Claude Code mid-turn)
        # would otherwise outlive an avatar killed with SIGKILL until the guard ends it.
        with entered(sandbox, argv, env, cwd, deathsig=signal.SIGTERM) as entry:
            popen = subprocess.Popen(
                entry.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                env=env,
                cwd=str(cwd),
                start_new_session=True,
                pass_fds=entry.pass_fds,
            )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as e:
        hint = f" (install: {install_hint})" if install_hint else ""
        raise ProviderError(f"{name}: cannot run {argv[0]}: {e.strerror or e}{hint}") from None
    except OSError as e:
        raise ProviderError(f"{name}: cannot start {argv[0]}: {e}") from None
    guard().watch(popen.pid)
    if sandbox is not None:
        sandbox.started()
    return Spawned(popen, sandbox)


def kill(spawned: Spawned) -> None:
    """End a spawned agent that was never adopted: its whole group, at once."""
    popen = spawned.popen
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, signal.SIGKILL)
    popen.wait()
    for stream in (popen.stdin, popen.stdout, popen.stderr):
        if stream is not None:
            stream.close()
    guard().release(popen.pid)
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
