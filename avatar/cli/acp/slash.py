"""The slash commands an ACP session of avatar offers (`available_commands_update`), run
when a prompt starts with one: `/provider NAME [--fresh | --new]` (switch, with the handoff
unless `--fresh`), `/sessions` (this project's sessions of every agent), `/fork [N]` (this
session forked, whole or to message N; the ACP session goes on in the fork), `/compact`,
`/status`, and `/rewind N [--files | --conversation]` (the files, the conversation or both
back to before turn N; the ACP session goes on in the rewound conversation). The agent's own
commands are offered after them; a prompt naming one of those goes to the agent.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any, Protocol

from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from avatar.engine.engine import Engine


class Face(Protocol):
    """What the commands use of an ACP session (`avatar.cli.acp.face.Face`)."""

    engine: Engine
    found: list[str]
    mode: str
    agent_commands: list[tuple[str, str]]
    heard: list[str] | None

    async def switch(self, provider: str, **how: Any) -> None:
        """Switch the session to `provider`."""


#: avatar's own commands: name, description, the hint for what follows it (None: nothing).
COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("provider", "Switch this session to another agent, handing the conversation over",
     "NAME [--fresh | --new]"),
    ("sessions", "This project's sessions of every agent", None),
    ("fork", "Fork this session (whole, or to message N) and go on in the fork", "[N]"),
    ("compact", "Compact this session's context", None),
    ("status", "Agent, model, session, context and whether the walls are up", None),
    ("rewind", "Rewind files and conversation to before turn N", "N [--files | --conversation]"),
)  # fmt: skip


def commands_update(face: Face) -> dict[str, Any]:
    """The `available_commands_update`: avatar's commands, then the agent's own."""
    names = {name for name, _, _ in COMMANDS}
    listed = [
        {"name": name, "description": about}
        | ({"input": {"hint": hint}} if hint is not None else {})
        for name, about, hint in COMMANDS
    ]
    listed += [
        {"name": name, "description": about or f"{face.engine.chosen_provider()}'s /{name}"}
        for name, about in face.agent_commands
        if name not in names
    ]
    return {"sessionUpdate": "available_commands_update", "availableCommands": listed}


async def run_command(face: Face, text: str) -> str | None:
    """Run the command `text` starts with, when it is one of avatar's: what to answer (with
    the notices it caused), or None for a prompt the agent gets."""
    said = text.strip()
    if not said.startswith("/"):
        return None
    try:
        words = shlex.split(said[1:])
    except ValueError:
        words = said[1:].split()
    if not words or words[0] not in {name for name, _, _ in COMMANDS}:
        return None
    face.heard = []
    try:
        lines = await _run(face, words[0], words[1:])
    except AvatarError as e:
        lines = [f"/{words[0]}: {e}"]
    finally:
        heard, face.heard = face.heard or [], None
    return "\n".join([*lines, *heard]) + "\n"


async def _run(face: Face, name: str, args: list[str]) -> list[str]:
    engine = face.engine
    if name == "provider":
        targets = [a for a in args if not a.startswith("--")]
        if len(targets) != 1:
            return [f"usage: /provider NAME [--fresh | --new] (one of: {', '.join(face.found)})"]
        await face.switch(targets[0], handoff="--fresh" not in args, new="--new" in args)
        current = engine.current
        where = f" session {current.session_id}" if current is not None else ""
        return [f"now on {engine.chosen_provider()}{where}"]
    if name == "sessions":
        rows = engine.library.sessions(None)[:50]
        return [f"{s.id}  {s.provider}  {s.title or 'untitled'}" for s in rows] or ["no sessions"]
    if name == "fork":
        at = int(args[0]) if args and args[0].isdigit() else None
        parent = engine.current.session_id if engine.current is not None else None
        forked = await engine.agent.fork(None, at)
        return [f"forked {parent} into {forked.provider} session {forked.session_id}"]
    if name == "compact":
        return [await engine.compact()]
    if name == "status":
        status = engine.status()
        walls = status.facts.get("sandbox", "unknown")
        n = status.numbers
        used = f"{n.context_percent:.0f}% of {n.context_size:,}" if n.context_percent else "?"
        cost = f"${n.cost_usd:.4f}" if n.cost_usd is not None else "unknown"
        return [
            f"agent: {status.provider}",
            f"model: {status.model or 'unknown'}",
            f"session: {status.session_id or 'none'} ({status.how or '-'})",
            f"permission mode: {face.mode}",
            f"walls: {walls}",
            f"context: {used}; cost: {cost}",
        ]
    turn = next((int(a) for a in args if a.isdigit()), None)
    if turn is None:
        return ["usage: /rewind N [--files | --conversation]"]
    files, conversation = "--conversation" not in args, "--files" not in args
    await engine.checkpoints.rewind(turn, files=files, conversation=conversation)
    return []  # (what it did was said in its notices, which the answer carries)
