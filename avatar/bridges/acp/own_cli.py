"""What an ACP agent does through its own command line, without its ACP server.

`cli_delete` (a quirk, `ProviderSpec.quirks`): Gemini CLI advertises no `session/delete`, but
`gemini --delete-session ID`, run in the session's project directory, deletes it (its files
and companions) without opening any session of its own, so no empty session file is left the
way starting `gemini --acp` to ask would. It answers 0 whether or not it deleted anything: what
it printed says which (`Deleted session …`, else one line why not).
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from avatar.bridges.acp.launch import agent_argv, agent_env
from avatar.core.errors import ProviderError

if TYPE_CHECKING:
    from avatar.bridges.base import BridgeContext
    from avatar.sessions.types import SessionInfo

#: The quirk, and the arguments that delete session ID.
CLI_DELETE = "cli_delete"
DELETE_ARGS = ("--delete-session",)
DELETED = "Deleted session"
TIMEOUT = 60.0


async def delete_with_cli(ctx: BridgeContext, info: SessionInfo) -> None:
    """Delete session `info` with the agent's own command (see the module docstring); a
    `ProviderError` with the agent's own words when it did not."""
    cwd = info.cwd
    if not cwd or not os.path.isdir(cwd):
        raise ProviderError(
            f"{ctx.spec.name} deletes a session from its project directory, "
            f"and that of session {info.id} ({cwd or 'unknown'}) is gone"
        )
    env = agent_env(ctx.spec, ctx.settings, ctx.env)
    program = agent_argv(ctx.spec, env)[0]
    proc = await asyncio.create_subprocess_exec(
        program,
        *DELETE_ARGS,
        info.id,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise ProviderError(
            f"{ctx.spec.name} --delete-session did not end within {TIMEOUT:g} s"
        ) from None
    said = out.decode(errors="replace").strip()
    if proc.returncode != 0 or not said.startswith(DELETED):
        lines = (err.decode(errors="replace").strip() or said).splitlines()
        why = lines[-1] if lines else f"exit {proc.returncode}"
        raise ProviderError(f"{ctx.spec.name} did not delete session {info.id}: {why}")
