"""`avatar mcp --allow-prompt`: two more tools, `open_session` and `prompt`, with which the
calling agent asks another agent (docs/design.md §12).

Each session asked is opened by an engine of its own, as `avatar chat` opens one: in the
project `avatar mcp` runs in, inside avatar's walls and scope, under the permission policy
`avatar mcp --permission` names (else the config's; `ask`, where nobody can answer, denies and
says which flag allows it, as in `chat`). The session stays open for the next `prompt` until
the server ends. A cancelled call (`notifications/cancelled`) interrupts the turn. What the
agent answers passes through the secret detector before the caller sees it.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from avatar.cli.mcp.protocol import Tool, ToolError
from avatar.core.errors import AvatarError
from avatar.core.events import Error, Notice, TextDelta, TurnFinished

if TYPE_CHECKING:
    from avatar.cli.state import AppState
    from avatar.core.events import BaseEvent
    from avatar.engine.engine import Engine


class Asker:
    """The sessions opened through `open_session` and `prompt`, by id."""

    def __init__(self, state: AppState, permission: str | None) -> None:
        self.state, self.permission = state, permission
        self._open: dict[str, tuple[Engine, asyncio.Lock]] = {}

    def _engine(self) -> Engine:
        return self.state.engine(permission=self.permission)

    async def _opened(self, engine: Engine, notices: list[str], **how: Any) -> str:
        listening = engine.subscribe(lambda event: _noted(event, notices))
        try:
            started = await engine.open(**how)
        except BaseException:
            await engine.close()
            raise
        finally:
            listening()
        self._open[started.session_id] = (engine, asyncio.Lock())
        return started.session_id

    async def open_session(self, args: dict[str, Any]) -> str:
        """Open a new session (seeded with a handoff of `from_session` when given)."""
        engine, notices = self._engine(), list[str]()
        try:
            sid = await self._opened(
                engine, notices, provider=args.get("provider"), source=args.get("from_session")
            )
        except AvatarError as e:
            raise ToolError(_mask(engine, str(e))) from None
        current = engine.current  # (the one just opened)
        opened: dict[str, object] = {"session": sid}
        opened["provider"] = current.provider if current else None
        opened |= {"how": current.how if current else None, "notices": notices}
        return _mask(engine, json.dumps(opened, ensure_ascii=False, indent=1))

    async def prompt(self, args: dict[str, Any]) -> str:
        """One turn on a session opened here, else on the one `session` names (resumed), else
        on a new one; the agent's answer, then the session's id and any notices."""
        engine: Engine | None = None
        notices: list[str] = []
        try:
            sid = self._find(args.get("session"))
            if sid is None:
                engine = self._engine()
                ref = args.get("session")
                sid = await self._opened(engine, notices, provider=args.get("provider"), resume=ref)
            engine, lock = self._open[sid]
            async with lock:
                # (notices outside the turn's own events too: a permission denied for want
                # of anyone to ask)
                listening = engine.subscribe(lambda event: _noted(event, notices))
                try:
                    return await _turn(engine, args["text"], notices)
                finally:
                    listening()
        except AvatarError as e:
            raise ToolError(_mask(engine, str(e)) if engine else str(e)) from None

    def _find(self, ref: str | None) -> str | None:
        """The id of a session open here that `ref` names (its id, or a unique prefix)."""
        if not ref:
            return None
        found = [sid for sid in self._open if sid.startswith(ref)]
        return found[0] if len(found) == 1 else None

    async def close(self) -> None:
        """Close every session opened here (their agents stop)."""
        for engine, _ in self._open.values():
            await engine.close()
        self._open.clear()

    def tools(self) -> list[Tool]:
        """`open_session` and `prompt`."""
        provider = {"type": "string", "description": "The agent: claude, codex, gemini, …"}
        return [
            Tool(
                "open_session",
                "Open a new session on another coding agent (Claude Code, Codex, Gemini, …) "
                "in this project, inside avatar's walls, optionally seeded with the handoff "
                "of an earlier session of any agent; returns its id for `prompt`.",
                {
                    "type": "object",
                    "properties": {
                        "provider": provider,
                        "from_session": {
                            "type": "string",
                            "description": "A session (id or prefix) whose handoff seeds it.",
                        },
                    },
                    "additionalProperties": False,
                },
                self.open_session,
                title="Open a session on another agent",
                read_only=False,
            ),
            Tool(
                "prompt",
                "Ask another coding agent: one turn on `session` (opened with open_session, "
                "or any session id of any agent, resumed), else on a new session of "
                "`provider`; returns its answer and the session id to continue with. It runs "
                "inside avatar's walls, and actions needing permission follow avatar mcp's "
                "--permission.",
                {
                    "type": "object",
                    "properties": {
                        "text": {"type": "string", "minLength": 1, "description": "The prompt."},
                        "session": {"type": "string", "description": "A session id or prefix."},
                        "provider": provider,
                    },
                    "required": ["text"],
                    "additionalProperties": False,
                },
                self.prompt,
                title="Ask another agent",
                read_only=False,
            ),
        ]


async def _turn(engine: Engine, text: str, notices: list[str]) -> str:
    answer: list[str] = []
    errors: list[str] = []
    stop = None
    try:
        async for event in engine.send(text):
            if event.replay:
                continue
            if isinstance(event, TextDelta):
                answer.append(event.text)
            elif isinstance(event, Error):
                errors.append(event.message)
            elif isinstance(event, TurnFinished):
                stop = event.stop_reason
            else:
                _noted(event, notices)
    except asyncio.CancelledError:
        await engine.cancel()
        raise
    current = engine.current
    lines = ["".join(answer).strip() or "(no answer)", ""]
    if current is not None:
        lines.append(f"session: {current.session_id} ({current.provider})")
    lines += [f"notice: {n}" for n in notices] + [f"error: {e}" for e in errors]
    if stop not in (None, "end_turn"):
        lines.append(f"stopped: {stop}")
    out = _mask(engine, "\n".join(lines))
    if errors:
        raise ToolError(out)
    return out


def _noted(event: BaseEvent, notices: list[str]) -> None:
    if isinstance(event, Notice) and not event.replay:
        notices.append(event.message)


def _mask(engine: Engine, text: str) -> str:
    return str(engine.registry.secrets().mask(text))
