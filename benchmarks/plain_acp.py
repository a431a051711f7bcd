"""A plain ACP client, the baseline of the one-shot benchmarks: spawn the agent, `initialize`,
`session/new`, one `session/prompt`, print the answer, end the agent. No more, no less.

The standard library only (no SDK, nothing of avatar): JSON-RPC is one JSON object a line on
the agent's stdio, and a client doing just this job needs nothing else.

    python -m benchmarks.plain_acp AGENT [ARGS...] -- PROMPT
    python -m benchmarks.plain_acp --warm N AGENT [ARGS...] -- PROMPT

With `--warm N` it is the warm floor instead: the agent started and initialized, then (once
it is at rest, untimed) N times `session/new` and the prompt, back to back; it prints the
seconds each took, as a JSON list.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any


def main(argv: list[str], prompt: str, warm: int = 0) -> None:
    """Run one prompt on the agent `argv` and print its answer (`warm`: see the docstring)."""
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

    def one_shot() -> None:
        session = call("session/new", {"cwd": os.getcwd(), "mcpServers": []})
        block = {"type": "text", "text": prompt}
        call("session/prompt", {"sessionId": session["sessionId"], "prompt": [block]})

    call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    if warm:
        at_rest(proc.pid)
        took = []
        for _ in range(warm):
            start = time.perf_counter()
            one_shot()
            took.append(time.perf_counter() - start)
        sys.stdout.write(json.dumps(took) + "\n")
    else:
        one_shot()
        sys.stdout.write("".join(text) + "\n")
    sys.stdout.flush()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def at_rest(group: int, quiet: float = 0.2, most: float = 20.0) -> None:
    """Wait until the processes of process group `group` use (almost) no CPU for `quiet`
    seconds, or `most` seconds have passed: an agent that has finished starting."""
    deadline = time.monotonic() + most
    before = _cpu(group)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = _cpu(group)
        if now - before < 0.02:
            return
        before = now


def _cpu(group: int) -> float:
    """Seconds of CPU the processes of `group` have used (from /proc)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # its process group
            total += sum(int(v) for v in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    args = sys.argv[1:]
    runs = 0
    if args[:1] == ["--warm"]:
        runs, args = int(args[1]), args[2:]
    split = args.index("--")
    main(args[:split], " ".join(args[split + 1 :]), runs)
