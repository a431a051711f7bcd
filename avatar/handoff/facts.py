"""The facts of a conversation a new agent needs first, read from its canonical transcript
without any model call: the goal, what the user decided, the files touched, the commands that
failed, the plan, and the turns themselves as lines (with those of the earlier legs of a
handoff chain, read from the blocks handed over into it: `legs`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from avatar.handoff import tools
from avatar.handoff.legs import Leg, Turn, block_source, block_turns
from avatar.sessions.handoff_marker import split_seeded

if TYPE_CHECKING:
    from avatar.sessions.types import Transcript, TranscriptMessage

# A later request "changes the goal" when it redirects the work; heuristics, kept few and plain.
_REDIRECT = re.compile(
    r"\b(instead|actually|change of plan|new task|scratch that|forget (?:that|about)|"
    r"rather than|switch to|from now on|let'?s also|also (?:add|make|do|handle|support)|"
    r"now (?:let'?s|please|i want|we need|add|make|do))\b",
    re.I,
)
# Sentences where the user sets a rule or picks an option.
_DECISION = re.compile(
    r"\b(must|mustn'?t|don'?t|do not|never|always|make sure|prefer|should(?:n'?t| not)?|"
    r"only use|use \S+ (?:not|instead)|keep|avoid|no more than|at most|at least|decided?)\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_TOOL_OUTPUT = 300  # tool results are the bulkiest and least needed part of a turn
_MESSAGE = 4_000  # one verbatim message at most (its middle is cut)
_ITEM = 300
_ERROR_LINES = 3


@dataclass
class HandoffFacts:
    """What a handoff says about its source, before it is fitted to a budget."""

    goal: str | None = None
    goal_changes: list[str] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (command, last lines)
    plan: list[tuple[str, str]] = field(default_factory=list)  # (status, step)
    #: One per message, oldest first: the earlier legs' (from handed-over blocks), then its own.
    turns: list[Turn] = field(default_factory=list)
    left_out: int = 0  # earlier turns the handed-over blocks had left out already


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half].rstrip() + " … " + text[-half:].lstrip()


def _one_line(text: str, limit: int = _ITEM) -> str:
    return _cut(" ".join(text.split()), limit)


def _add(items: list[str], *new: str) -> None:
    for item in new:
        if item and item not in items:
            items.append(item)


def section(block: str, heading: str) -> list[str]:
    """The lines under `## heading` of an earlier handoff block."""
    match = re.search(
        rf"^## {re.escape(heading)}[^\n]*\n(.*?)(?=^## |^=== |\Z)", block, re.M | re.S
    )
    return [ln for ln in match.group(1).splitlines() if ln.strip()] if match else []


def _bullets(lines: list[str]) -> list[str]:
    return [ln[2:].strip() for ln in lines if ln.startswith("- ")]


def _failures(block: str) -> list[tuple[str, str]]:
    """The failed commands an earlier handoff listed: (command, last lines)."""
    out: list[tuple[str, str]] = []
    for line in section(block, "Commands that failed"):
        if line.startswith("- `"):
            cmd = line[3:].removesuffix(":").removesuffix("`")
            out.append((cmd, ""))
        elif out and line.startswith("  "):
            cmd, tail = out[-1]
            out[-1] = (cmd, f"{tail}\n{line[2:]}" if tail else line[2:])
    return out


class _Reader:
    def __init__(self, inherit: bool, target: Leg | None, known: frozenset[str]) -> None:
        self.facts = HandoffFacts()
        self.inherits = inherit
        self.target = target
        self.known = known  # the turn lines the target holds already
        self.commands: dict[str, str] = {}  # tool call id → command

    def inherit(self, block: str) -> None:
        """An earlier handoff pasted in a user message: its goal and lists carry over once."""
        facts = self.facts
        goal = [ln for ln in section(block, "Goal") if not ln.startswith("- ")]
        if facts.goal is None and goal:
            facts.goal = "\n".join(goal)
        _add(facts.goal_changes, *_bullets(section(block, "Goal")))
        _add(facts.decisions, *_bullets(section(block, "Decisions")))
        _add(facts.files_changed, *_bullets(section(block, "Files changed")))
        _add(facts.files_read, *_bullets(section(block, "Files read")))

    def earlier_legs(self, block: str) -> None:
        """What an earlier handoff carried that goes on down the chain whatever the target:
        the commands that failed (until a later run passes) and the earlier legs' turns,
        except those the target holds already (said there, or handed or imported into it)."""
        for failure in _failures(block):
            self._failed(*failure)
        carried = block_turns(block)
        if self.target is not None and block_source(block) == self.target:
            return  # a return to where this block came from: every turn of it is known there
        kept = [t for t in carried.turns if t.leg != self.target and t.line not in self.known]
        self.facts.turns.extend(kept)
        self.facts.left_out += carried.left_out

    def _failed(self, cmd: str, tail: str | None) -> None:
        """The latest outcome of `cmd`: failed with `tail`, or passed (None)."""
        cmd = _one_line(cmd, 200)
        self.facts.failures = [f for f in self.facts.failures if f[0] != cmd]
        if tail is not None:
            self.facts.failures.append((cmd, tail))

    def user(self, msg: TranscriptMessage) -> None:
        own, blocks = split_seeded(msg.text)
        for block in blocks:
            if self.inherits:
                self.inherit(block)
            self.earlier_legs(block)
        facts = self.facts
        if own:
            if facts.goal is None:
                facts.goal = _cut(own, _MESSAGE)
            elif _REDIRECT.search(own):
                _add(facts.goal_changes, _one_line(own))
            for sentence in _SENTENCE.split(own):
                if _DECISION.search(sentence):
                    _add(facts.decisions, _one_line(sentence))
        if own:  # (a message of handed-over context alone is the turns it carried)
            facts.turns.append(Turn("USER: " + _cut(own, _MESSAGE)))

    def assistant(self, msg: TranscriptMessage) -> None:
        facts = self.facts
        parts = [_cut(msg.text, _MESSAGE)] if msg.text.strip() else []
        for call in msg.tool_calls:
            _add(facts.files_changed, *tools.changed_files(call.name, call.input))
            _add(facts.files_read, *tools.read_files(call.name, call.input))
            if (cmd := tools.command(call.name, call.input)) and call.id:
                self.commands[call.id] = cmd
            if (steps := tools.plan(call.name, call.input)) is not None:
                facts.plan = steps
            arg = call.input if isinstance(call.input, str) else _short(call.input)
            parts.append(f"[tool call {call.name}] {arg}".rstrip())
        if parts:
            facts.turns.append(Turn("ASSISTANT: " + "\n".join(parts)))

    def tool(self, msg: TranscriptMessage) -> None:
        text = msg.text.strip()
        cmd = self.commands.get(msg.tool_call_id or "")
        if cmd is not None:  # the latest outcome of a command is the one that counts
            tail = [ln.strip() for ln in text.splitlines() if ln.strip()][-_ERROR_LINES:]
            self._failed(cmd, "\n".join(tail) if msg.is_error else None)
        if text:
            cut = text if len(text) <= _TOOL_OUTPUT else text[:_TOOL_OUTPUT] + " …"
            label = "[tool result (error)]" if msg.is_error else "[tool result]"
            self.facts.turns.append(Turn(f"{label} {cut}"))


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if value is not None else ""
    return text if len(text) <= 200 else text[:200] + " …"


def read_facts(
    transcript: Transcript,
    *,
    inherit: bool = True,
    target: Leg | None = None,
    known: frozenset[str] = frozenset(),
) -> HandoffFacts:
    """The facts of `transcript` (every message of it, oldest first); with `inherit`, those
    of earlier handoffs pasted into it too (its original goal, once). The earlier legs' turns
    and failed commands always come along, except turns said in session `target` and turns
    whose line is in `known` (`held_lines`: what the target holds already)."""
    reader = _Reader(inherit, target, known)
    for msg in transcript.messages:
        if msg.role == "user":
            reader.user(msg)
        elif msg.role == "assistant":
            reader.assistant(msg)
        elif msg.role == "tool":
            reader.tool(msg)
    facts = reader.facts
    facts.goal_changes = facts.goal_changes[-8:]
    facts.decisions = facts.decisions[-12:]
    facts.failures = facts.failures[-8:]
    return facts


def held_lines(transcript: Transcript) -> frozenset[str]:
    """The turn lines a session holds, however it got them: its own messages (an import's
    too) and the turns of the blocks handed over into it, as a handoff writes them (secrets
    masked the way the handoff masks them: give a masked transcript)."""
    return frozenset(t.line for t in read_facts(transcript, inherit=False).turns)
