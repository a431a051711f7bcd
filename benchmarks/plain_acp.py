"""A plain ACP client, the baseline of the one-shot benchmark: spawn the agent, `initialize`,
`session/new`, one `session/prompt`, print the answer, end the agent. No more, no less.

    python -m benchmarks.plain_acp AGENT [ARGS...] -- PROMPT
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any


class _Client:
    def __init__(self) -> None:
        self.text: list[str] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if getattr(update, "session_update", None) == "agent_message_chunk":
            self.text.append(getattr(update.content, "text", ""))

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


async def main(argv: list[str], prompt: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
        limit=50 * 1024 * 1024,
    )
    import acp  # while the agent boots, as any careful client would

    client = _Client()
    assert proc.stdin is not None and proc.stdout is not None
    conn = acp.connect_to_agent(client, proc.stdin, proc.stdout)  # type: ignore[arg-type]
    await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
    session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
    await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(prompt)])
    sys.stdout.write("".join(client.text) + "\n")
    sys.stdout.flush()
    os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


if __name__ == "__main__":
    split = sys.argv.index("--")
    asyncio.run(main(sys.argv[1:split], " ".join(sys.argv[split + 1 :])))
