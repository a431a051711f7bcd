"""A plain stream-json client of Claude Code, the floor of the Claude one-shot: spawn
`claude -p` in stream-json mode, write one user message, read to the `result`, end claude.
No more: what any Python program that keeps claude's stream-json process costs.

    python -m benchmarks.plain_stream_json CLAUDE PROMPT
    python -m benchmarks.plain_stream_json --warm N CLAUDE PROMPT

With `--warm N` it is the warm floor instead, N times: claude started on a new session and,
once it is at rest (untimed), the prompt written and its `result` read; it prints the seconds
each prompt took, as a JSON list.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

from benchmarks.plain_acp import at_rest

FLAGS = ("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")


def main(claude: str, prompt: str, warm: bool = False) -> float:
    """Run `prompt` on a new claude; the seconds from writing it to its result (from the
    start when not `warm`)."""
    argv = [claude, *FLAGS, "--session-id", str(uuid.uuid4())]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=warm
    )
    assert proc.stdin is not None and proc.stdout is not None
    if warm:
        at_rest(proc.pid)
    start = time.perf_counter()
    message = {"type": "user", "message": {"role": "user", "content": prompt}}
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    for line in proc.stdout:
        if json.loads(line).get("type") == "result":
            break
    took = time.perf_counter() - start
    if warm:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return took
    proc.stdin.close()
    code = proc.wait()
    if code:
        sys.exit(code)
    return took


if __name__ == "__main__":
    if sys.argv[1] == "--warm":
        runs = int(sys.argv[2])
        took = [main(sys.argv[3], sys.argv[4], warm=True) for _ in range(runs)]
        sys.stdout.write(json.dumps(took) + "\n")
    else:
        main(sys.argv[1], sys.argv[2])
