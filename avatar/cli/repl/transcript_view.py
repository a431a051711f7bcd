"""Ctrl-O: the transcript in a pager — every past turn with what the screen folds away: the
prompt as sent (pastes in full), thinking in full, each tool call's input and its whole output,
the `!command`s run and their output, and the handoff waiting to open the next prompt.

The REPL records what it shows (`TranscriptLog.observe`, fed every event of this run); the
turns of a reopened session before this run come from its store (`OpenSession.history`),
which keeps what the agent recorded of them. The pager is `$PAGER` (else `less -R`), run with
the terminal handed over; without one the transcript is printed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from avatar.policy.terminal_text import inert

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from avatar.core.events import BaseEvent
    from avatar.sessions.types import TranscriptMessage

_RULE = "─" * 8


@dataclass
class _Call:
    title: str
    input: dict[str, Any] | None
    output: list[str] = field(default_factory=list)
    ended: str = ""


@dataclass
class _Turn:
    prompt: str
    started: float
    parts: list[str | _Call] = field(default_factory=list)  # text, or a tool call
    ended: str = ""


class TranscriptLog:
    """What this run of the REPL saw, turn by turn, in full (see the module docstring): each
    session opened (a line), its earlier turns as its store keeps them (when it was
    reopened), then the turns run here."""

    def __init__(self) -> None:
        self.entries: list[_Turn | str | list[TranscriptMessage]] = []
        self._turn: _Turn | None = None  # the running (or last) turn
        self._calls: dict[str, _Call] = {}
        self._kind = ""  # the kind of the text part being added to: answer or thinking

    def earlier(self, messages: list[TranscriptMessage]) -> None:
        """The turns of a reopened session before this run, as its store keeps them."""
        self.entries.append(list(messages))

    def prompt(self, text: str) -> None:
        """A turn starts with `text` (as sent)."""
        self._turn = _Turn(text, time.time())
        self.entries.append(self._turn)
        self._calls, self._kind = {}, ""

    def shell(self, command: str, output: str, ended: str) -> None:
        """A `!command` ran, with this output."""
        turn = _Turn(f"!{command}", time.time())
        turn.parts.append(_Call(f"$ {command}", None, [output], ended))
        self.entries.append(turn)

    def _text(self, kind: str, text: str) -> None:
        assert self._turn is not None
        turn = self._turn
        if self._kind == kind and turn.parts and isinstance(turn.parts[-1], str):
            turn.parts[-1] += text
        else:
            turn.parts.append(("thinking: " if kind == "thinking" else "") + text)
        self._kind = kind

    def observe(self, event: BaseEvent) -> None:
        """One event of the running turn (replayed history is the store's to show)."""
        import avatar.core.events as ev

        if event.replay:
            return
        if isinstance(event, ev.SessionStarted):  # (opened by the turn: said before it)
            said = f"session {event.session_id} ({event.provider}, {event.how})"
            at = len(self.entries) - (self._turn is not None and self.entries[-1] is self._turn)
            self.entries.insert(at, said)
        turn = self._turn
        if turn is None:
            return
        if isinstance(event, ev.TextDelta):
            self._text("answer", event.text)
        elif isinstance(event, ev.ThinkingDelta):
            self._text("thinking", event.text)
        elif isinstance(event, ev.ToolCallStarted):
            call = _Call(event.title or event.name, event.input)
            self._calls[event.id] = call
            turn.parts.append(call)
            self._kind = ""
        elif isinstance(event, ev.ToolCallUpdated) and event.id in self._calls:
            if event.title:
                self._calls[event.id].title = event.title
            if event.output:
                self._calls[event.id].output = [event.output]
        elif isinstance(event, ev.ToolCallFinished) and event.id in self._calls:
            call = self._calls[event.id]
            if event.output:
                call.output = [event.output]
            call.ended = "failed" if event.is_error else "done"
        elif isinstance(event, ev.UserMessage):
            turn.parts.append(f"› {event.text}")
            self._kind = ""
        elif isinstance(event, ev.PermissionRequested) and event.decision != "pending":
            why = f" ({event.reason})" if event.reason else ""
            turn.parts.append(f"permission {event.decision}: {event.title}{why}")
            self._kind = ""
        elif isinstance(event, ev.Notice | ev.Error):
            turn.parts.append(f"({event.message})")
            self._kind = ""
        elif isinstance(event, ev.TurnFinished):
            turn.ended = event.stop_reason.replace("_", " ")
            self._turn = None


def _call_lines(call: _Call) -> list[str]:
    lines = [f"⏺ {call.title}" + (f"  [{call.ended}]" if call.ended else "")]
    if call.input:
        shown = json.dumps(call.input, ensure_ascii=False, indent=2, default=str)
        lines += ["  input:", *(f"    {line}" for line in shown.splitlines())]
    output = "".join(call.output).rstrip("\n")
    if output:
        lines += ["  output:", *(f"    {line}" for line in output.splitlines())]
    return lines


def _earlier(messages: list[TranscriptMessage]) -> list[str]:
    lines = [f"{_RULE} earlier in this session (as its store keeps it)"]
    for m in messages:
        if m.role == "user":
            lines += ["", f"› {m.text}"]
        elif m.role == "assistant":
            lines += [m.text] if m.text else []
            for call in m.tool_calls:
                lines += _call_lines(_Call(call.name, _as_input(call.input)))
        elif m.role == "tool":
            mark = "  output (error):" if m.is_error else "  output:"
            lines += [mark, *(f"    {line}" for line in m.text.splitlines())]
    return lines


def _as_input(value: object) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    return {"input": value} if value else None


def render(log: TranscriptLog, handoff: str | None) -> str:
    """The whole transcript as text, made inert for the terminal."""
    lines: list[str] = []
    n = 0
    for entry in log.entries:
        if isinstance(entry, str):
            lines += ["", f"{_RULE} {entry}"]
            continue
        if isinstance(entry, list):
            lines += _earlier(entry)
            continue
        n += 1
        when = time.strftime("%H:%M:%S", time.localtime(entry.started))
        lines += ["", f"{_RULE} turn {n} · {when}" + (f" · {entry.ended}" if entry.ended else "")]
        lines += [f"› {entry.prompt}", ""]
        for part in entry.parts:
            lines += _call_lines(part) if isinstance(part, _Call) else part.rstrip().splitlines()
    if handoff:
        lines += ["", f"{_RULE} the handoff your next prompt sends", handoff]
    if not lines:
        lines = ["nothing in this session yet"]
    return inert("\n".join(lines).strip("\n")) + "\n"


def pager_command(env: Mapping[str, str], find: Callable[[str], str | None]) -> list[str] | None:
    """`$PAGER` (as an argv), else `less -R`, found by `find` (`Engine.user_program`: never
    in the project); None for none."""
    try:
        argv = shlex.split(env.get("PAGER", "").strip()) or ["less", "-R"]
    except ValueError:
        return None
    found = find(argv[0])
    return [found, *argv[1:]] if found else None


def page(
    text: str, find: Callable[[str], str | None], env: Mapping[str, str] | None = None
) -> bool:
    """Show `text` in the pager (blocks until it is left: run with the terminal handed
    over); False when there is no pager to run."""
    env = dict(os.environ if env is None else env)
    argv = pager_command(env, find)
    if argv is None:
        return False
    env.setdefault("LESS", "-R")
    try:
        subprocess.run(argv, input=text.encode("utf-8", "replace"), env=env, check=False)
    except OSError:
        return False
    return True
