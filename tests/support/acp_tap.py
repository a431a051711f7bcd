"""A tap between avatar and an ACP agent: `python acp_tap.py LOG AGENT [ARGS...]` runs the
agent with its stdout and stderr avatar's own, and copies every line avatar sends it to LOG
(one JSON-RPC message a line), so a test can read which requests avatar made; each start of
the tap first writes `{"tap": "started", "pid": PID}` there, with `"wrote": true/false` when
$TAP_TRY_WRITE names a file it was to try to create first (inside walls or not)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main() -> int:
    log, agent = sys.argv[1], sys.argv[2:]
    proc = subprocess.Popen(agent, stdin=subprocess.PIPE)
    assert proc.stdin is not None
    started: dict[str, object] = {"tap": "started", "pid": os.getpid()}
    if os.environ.get("TAP_TRY_WRITE"):
        try:
            with open(os.environ["TAP_TRY_WRITE"], "w") as probe:
                probe.write("written")
            started["wrote"] = True
        except OSError:
            started["wrote"] = False
    with open(log, "ab") as out:
        out.write(json.dumps(started).encode() + b"\n")
        out.flush()
        for line in sys.stdin.buffer:
            out.write(line)
            out.flush()
            proc.stdin.write(line)
            proc.stdin.flush()
    proc.stdin.close()
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
