"""A program spoken to in newline-delimited JSON-RPC over its stdin and stdout, for the tests'
stdio clients (`acp_client`, `mcp_client`): started, written to, read from, closed; what it
writes on stderr kept as it comes (a full pipe would stall it).

Standard library only: the clients also measure start-up (benchmarks/acp_face.py, mcp.py).
"""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class StdioPeer:
    """One running program and the requests sent to it (ids counted from 1)."""

    def __init__(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout: float
    ) -> None:
        self.name = Path(argv[0]).name
        self.proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.timeout = timeout
        self._next = 0
        self._stderr: list[bytes] = []
        self._reading = threading.Thread(target=self._drain_stderr, daemon=True)
        self._reading.start()

    def __enter__(self) -> StdioPeer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    def stderr(self) -> str:
        """What the program wrote on stderr so far."""
        return b"".join(self._stderr).decode(errors="replace")

    def send(self, message: Any) -> None:
        """Write one message (a dict, or a list for a batch), or raw bytes as they are."""
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def read_line(self) -> Any:
        """The next message the program writes (AssertionError when it closed stdout)."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"{self.name} ended: {self.stderr()}"
        return json.loads(line)

    def start(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting for its answer; its id."""
        self._next += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def close(self) -> int:
        """Close stdin and wait for the program to end; its exit code."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
        finally:
            self._reading.join(timeout=5)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
