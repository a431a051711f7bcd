"""A small stdio ACP client for tests: starts an agent command (`avatar acp`), speaks
newline-delimited JSON-RPC to it, keeps every `session/update` it sends, and answers its
permission questions with `answer` (default: deny).

    with AcpClient([AVATAR, "acp"], env=env, cwd=cwd) as client:
        client.initialize()
        sid = client.request("session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"]
        answer = client.request("session/prompt", {"sessionId": sid, "prompt": [text("hi")]})
        said = client.text(sid)

Standard library only, so it also measures start-up (benchmarks/acp_face.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.stdio_peer import StdioPeer

Answerer = Callable[[dict[str, Any]], str | None]
"""Picks the option id for a permission question's params (None: cancelled)."""


def text(said: str) -> dict[str, str]:
    """A text content block."""
    return {"type": "text", "text": said}


def deny(params: dict[str, Any]) -> str | None:
    """Answer every permission question with the first reject option."""
    return _first(params, "reject")


def allow(params: dict[str, Any]) -> str | None:
    """Answer every permission question with the first allow option."""
    return _first(params, "allow")


def _first(params: dict[str, Any], kind: str) -> str | None:
    for option in params.get("options") or []:
        if str(option.get("kind", "")).startswith(kind):
            return str(option["optionId"])
    return None


class AcpError(Exception):
    """An error answer of the agent: `code` and `message`."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('message')} ({error.get('code')})")
        self.code = error.get("code")
        self.message = str(error.get("message"))


class AcpClient(StdioPeer):
    """One running agent, the requests sent to it (ids counted from 1), what it sent back."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        timeout: float = 120,
        answer: Answerer = deny,
    ) -> None:
        super().__init__(argv, env=env, cwd=cwd, timeout=timeout)
        self.answer = answer
        self.early: dict[Any, dict[str, Any]] = {}  #: answers read while waiting for another
        self.updates: list[dict[str, Any]] = []  #: every session/update's params, in order
        self.asked: list[dict[str, Any]] = []  #: every permission question's params
        self.called: list[str] = []  #: the method of every request the agent made

    def __enter__(self) -> AcpClient:
        return self

    def read(self) -> dict[str, Any]:
        """The next message the agent writes, its requests answered and its updates kept."""
        message: dict[str, Any] = self.read_line()
        if "method" in message and "id" in message:
            self.called.append(str(message["method"]))
        if message.get("method") == "session/update":
            self.updates.append(message["params"])
        elif message.get("method") == "session/request_permission":
            self.asked.append(message["params"])
            chosen = self.answer(message["params"])
            outcome = (
                {"outcome": "selected", "optionId": chosen}
                if chosen is not None
                else {"outcome": "cancelled"}
            )
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}})
        elif "method" in message and "id" in message:  # a client method this one lacks
            error = {"code": -32601, "message": "method not found"}
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
        return message

    def answer_to(self, msg_id: int) -> Any:
        """The result of request `msg_id`; `AcpError` for an error answer."""
        while msg_id not in self.early:
            message = self.read()
            if "method" not in message:
                self.early[message.get("id")] = message
        reply = self.early.pop(msg_id)
        if "error" in reply:
            raise AcpError(reply["error"])
        return reply.get("result")

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request and wait for its result."""
        return self.answer_to(self.start(method, params))

    def initialize(self) -> dict[str, Any]:
        """`initialize` as an editor asks it (fs and terminal offered); its result."""
        params = {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
            },
            "clientInfo": {"name": "avatar-tests", "version": "1"},
        }
        return dict(self.request("initialize", params))

    def of(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        """The updates of a session (of one `sessionUpdate` kind), in order."""
        return [
            u["update"]
            for u in self.updates
            if u.get("sessionId") == session_id
            and (kind is None or u["update"].get("sessionUpdate") == kind)
        ]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        """The text of a session's chunks of one kind, joined."""
        return "".join(u["content"].get("text", "") for u in self.of(session_id, kind))
