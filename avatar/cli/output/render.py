"""Plain-stream rendering of events for `chat`: answer on stdout, everything else on stderr.

What the model and the agent said is made inert on a stream that is a terminal
(`avatar.policy.terminal_text`); piped or redirected, the answer is data and passes as it is.
"""

from __future__ import annotations

import sys
from typing import TextIO

from avatar.core.events import (
    BaseEvent,
    Error,
    Notice,
    PermissionRequested,
    SessionStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
)
from avatar.policy.terminal_text import inert, is_terminal


def session_line(event: SessionStarted) -> str:
    """The `session: <id> (<provider>, <how>)` line of the output contract."""
    return f"session: {event.session_id} ({event.provider}, {event.how})"


def error_line(event: Error) -> str:
    """The one line an `Error` event is shown as (`avatar: MESSAGE (LAST LINE OF DETAIL)`)."""
    detail = ""
    if event.detail:
        last = event.detail.strip().splitlines()
        detail = f" ({last[-1].strip()})" if last else ""
    return f"avatar: {event.message}{detail}"


class LineRenderer:
    """Renders events as lines; with `json_out`, one JSON event per stdout line instead."""

    def __init__(
        self, json_out: bool, out: TextIO | None = None, err: TextIO | None = None
    ) -> None:
        self.json_out = json_out
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.errors: list[Error] = []
        self.stop_reason: str | None = None
        self._at_line_start = True
        self._tools: dict[str, str] = {}
        self._shown_out = inert if is_terminal(self.out) else str
        self._shown_err = inert if is_terminal(self.err) else str

    def _say(self, line: str) -> None:
        if not self._at_line_start and not self.json_out:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True
        self.err.write(self._shown_err(line) + "\n")
        self.err.flush()

    def on_event(self, event: BaseEvent) -> None:
        """Render one event."""
        # (one line once: an agent's death can reach a joined chat's turn twice)
        repeated = isinstance(event, Error) and any(
            error_line(said) == error_line(event) for said in self.errors
        )
        if isinstance(event, Error):
            self.errors.append(event)
        if isinstance(event, TurnFinished):
            self.stop_reason = event.stop_reason
        if isinstance(event, SessionStarted):
            self._say(session_line(event))
        if self.json_out:
            self.out.write(event.to_json() + "\n")
            self.out.flush()
            if isinstance(event, Notice):
                self._say(f"notice: {event.message}")
            return
        if event.replay:
            return
        if isinstance(event, TextDelta):
            self.out.write(self._shown_out(event.text))
            self.out.flush()
            self._at_line_start = event.text.endswith("\n")
        elif isinstance(event, Notice):
            self._say(f"notice: {event.message}")
        elif isinstance(event, Error) and not repeated:
            self._say(error_line(event))
        elif isinstance(event, ToolCallStarted):
            self._tools[event.id] = event.title or event.name
            self._say(f"tool: {event.title or event.name}")
        elif isinstance(event, ToolCallFinished) and event.is_error:
            first = event.output.strip().splitlines()[:1]
            self._say(f"tool failed: {self._tools.get(event.id, event.id)}: {' '.join(first)}")
        elif isinstance(event, PermissionRequested) and event.decision != "pending":
            verb = "allowed" if event.decision == "allow" else "denied"
            self._say(f"permission {verb}: {event.title}")
        elif isinstance(event, TurnFinished) and not self._at_line_start:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True
