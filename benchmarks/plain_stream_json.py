"""A plain stream-json client of Claude Code, the floor of the Claude one-shot: spawn
`claude -p` in stream-json mode, write one user message, read to the `result`, end claude.
No more: what any Python program that keeps claude's stream-json process costs.

    python -m benchmarks.plain_stream_json CLAUDE PROMPT
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

FLAGS = ("-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")


def main(claude: str, prompt: str) -> None:
    argv = [claude, *FLAGS, "--session-id", str(uuid.uuid4())]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    message = {"type": "user", "message": {"role": "user", "content": prompt}}
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    for line in proc.stdout:
        if json.loads(line).get("type") == "result":
            break
    proc.stdin.close()
    sys.exit(proc.wait())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
