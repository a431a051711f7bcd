"""A tap between avatar and an ACP agent: `python acp_tap.py LOG AGENT [ARGS...]` runs the
agent with its stdout and stderr avatar's own, and copies every line avatar sends it to LOG
(one JSON-RPC message a line), so a test can read which requests avatar made."""

from __future__ import annotations

import subprocess
import sys


def main() -> int:
    log, agent = sys.argv[1], sys.argv[2:]
    proc = subprocess.Popen(agent, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    with open(log, "ab") as out:
        for line in sys.stdin.buffer:
            out.write(line)
            out.flush()
            proc.stdin.write(line)
            proc.stdin.flush()
    proc.stdin.close()
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
