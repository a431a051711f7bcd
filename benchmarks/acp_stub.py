"""The baseline of `avatar acp`'s start-up (benchmarks/acp_face.py): the least an ACP agent in
Python does before its first answer — start, read `initialize`, answer it — with the standard
library alone: Python's own start plus the protocol's."""

import json
import sys

for line in sys.stdin.buffer:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
