"""A plain ACP client, the baseline of the one-shot benchmark: spawn the agent, `initialize`,
`session/new`, one `session/prompt`, print the answer, end the agent. No more, no less.

The standard library only (no SDK, nothing of avatar): JSON-RPC is one JSON object a line on
the agent's stdio, and a client doing just this job needs nothing else.

    python -m benchmarks.plain_acp AGENT [ARGS...] -- PROMPT
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any


def main(argv: list[str], prompt: str) -> None:
    """Run one prompt on the agent `argv` and print its answer."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    out, inp = proc.stdin, proc.stdout
    ids = iter(range(1, 1 << 30))
    text: list[str] = []

    def call(method: str, params: dict[str, Any]) -> Any:
        request_id = next(ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()
        for line in inp:
            msg = json.loads(line)
            if msg.get("id") == request_id and "method" not in msg:
                if "error" in msg:
                    raise SystemExit(f"{method}: {msg['error']}")
                return msg.get("result")
            update = msg.get("params", {}).get("update", {})
            if msg.get("method") == "session/update":
                if update.get("sessionUpdate") == "agent_message_chunk":
                    text.append(update.get("content", {}).get("text", ""))
            elif "id" in msg:  # a request of the agent's: this client offers nothing
                error = {"code": -32601, "message": "method not found"}
                reply = {"jsonrpc": "2.0", "id": msg["id"], "error": error}
                out.write(json.dumps(reply).encode() + b"\n")
                out.flush()
        raise SystemExit(f"the agent exited during {method}")

    call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = call("session/new", {"cwd": os.getcwd(), "mcpServers": []})
    block = {"type": "text", "text": prompt}
    call("session/prompt", {"sessionId": session["sessionId"], "prompt": [block]})
    sys.stdout.write("".join(text) + "\n")
    sys.stdout.flush()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


if __name__ == "__main__":
    split = sys.argv.index("--")
    main(sys.argv[1:split], " ".join(sys.argv[split + 1 :]))
