"""The library as MCP tools (docs/design.md §12): `search_sessions`, `list_sessions`,
`show_session` and `handoff`, over `engine.library`, read-only.

The engine is built on the first call, not at start (`tools/list` answers before it: the
target is 300 ms), and every call runs in one thread of its own, off the event loop, one at a
time. What a tool returns passes through the engine's secret detector before the client sees
it, errors included (`Reader.run`): the same one detector as the terminal's.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from avatar.cli.mcp.protocol import Tool, ToolError
from avatar.core.errors import AvatarError

if TYPE_CHECKING:
    from collections.abc import Callable

    from avatar.cli.state import AppState
    from avatar.engine.engine import Engine
    from avatar.sessions.types import Transcript

#: The budget of a `handoff` when none is given, in estimated tokens.
HANDOFF_TOKENS = 8_000
#: Characters a `show_session` page holds at most when none is given.
PAGE_CHARS = 20_000

_PROVIDER = {"type": "string", "description": "Only this provider's sessions (claude, codex, …)."}
_SESSION = {
    "type": "string",
    "minLength": 1,
    "description": "A session id, or a unique prefix of one, of any provider.",
}


def _object(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _count(default: int, top: int, what: str, low: int = 1) -> dict[str, Any]:
    return {
        "type": "integer",
        "minimum": low,
        "maximum": top,
        "default": default,
        "description": what,
    }


class Reader:
    """What the library tools share: the engine, built from the command's global options on
    the first call, and the one thread every read runs in."""

    def __init__(self, state: AppState) -> None:
        self.state = state
        self._engine: Engine | None = None
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="avatar-mcp")

    def engine(self) -> Engine:
        """The engine over this project's config (built once; in the reading thread)."""
        if self._engine is None:
            self._engine = self.state.engine()
        return self._engine

    async def run(self, read: Callable[[Engine], object]) -> str:
        """`read(engine)` in the reading thread, as the text of a tool result: JSON for data,
        secrets masked; an avatar error becomes the tool's error, masked too."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._read, read)

    def _read(self, read: Callable[[Engine], object]) -> str:
        try:
            engine = self.engine()
            found = read(engine)
        except AvatarError as e:
            raise ToolError(self.mask(str(e))) from None
        if isinstance(found, str):
            return self.mask(found)
        masked = engine.registry.secrets().mask_data(found)
        return json.dumps(masked, ensure_ascii=False, indent=1)

    def mask(self, text: str) -> str:
        """`text` with every secret masked by the engine's detector."""
        return self.engine().registry.secrets().mask(text)

    def close(self) -> None:
        """Let the reading thread go."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def library_tools(reader: Reader) -> list[Tool]:
    """The four read-only tools over the library."""

    async def search(args: dict[str, Any]) -> str:
        return await reader.run(lambda engine: _search(engine, args))

    async def listing(args: dict[str, Any]) -> str:
        return await reader.run(lambda engine: _list(engine, args))

    async def show(args: dict[str, Any]) -> str:
        return await reader.run(lambda engine: _show(engine, args))

    async def handoff(args: dict[str, Any]) -> str:
        budget = args.get("budget_tokens", HANDOFF_TOKENS)
        return await reader.run(lambda engine: engine.library.handoff(args["session"], budget))

    return [
        Tool(
            "search_sessions",
            "Find sessions of every coding agent (Claude Code, Codex, Gemini, …) by what was "
            "said or done in them: messages, tool calls and tool output. The query is as "
            '`avatar session search` takes it: every word must occur, "a phrase" in double '
            "quotes and code tokens like foo_bar() or --flag match as written. Best match "
            "first, each with its id, provider, title, project (cwd), last update and a "
            "snippet; this project's sessions unless all_projects.",
            _object(
                ["query"],
                query={"type": "string", "minLength": 1, "description": "What to look for."},
                provider=_PROVIDER,
                all_projects={"type": "boolean", "description": "Sessions of every directory."},
                since={
                    "type": "string",
                    "description": "Only sessions updated within AGE: 30d, 12h, 2w.",
                },
                limit=_count(20, 200, "Sessions to return."),
                offset=_count(0, 1_000_000, "Skip this many matches first.", low=0),
            ),
            search,
            title="Search sessions",
        ),
        Tool(
            "list_sessions",
            "Sessions of every coding agent in this project (or every directory), newest "
            "first: id, provider, title, cwd, created, updated, message count, model, and "
            "the session each was forked or handed over from.",
            _object(
                [],
                provider=_PROVIDER,
                all_projects={"type": "boolean", "description": "Sessions of every directory."},
                limit=_count(50, 500, "Sessions to return."),
                offset=_count(0, 1_000_000, "Skip this many first.", low=0),
            ),
            listing,
            title="List sessions",
        ),
        Tool(
            "show_session",
            "A session's transcript, any provider's, one page at a time: numbered messages "
            "(user, assistant, tool output) with their tool calls, secrets masked. A page ends "
            "at max_messages or max_chars; its last line says where the next one starts.",
            _object(
                ["session"],
                session=_SESSION,
                from_message=_count(1, 10_000_000, "The first message of the page (1-based)."),
                max_messages=_count(50, 500, "Messages a page holds at most."),
                max_chars=_count(PAGE_CHARS, 200_000, "Characters a page holds at most.", 1_000),
            ),
            show,
            title="Show a session",
        ),
        Tool(
            "handoff",
            "The structured summary of a session for taking over its work: its goal, the "
            "decisions and constraints the user stated, files changed and read, commands "
            "that failed, the plan, then its newest turns verbatim, fitted to budget_tokens "
            "(estimated), secrets masked. The same handoff avatar gives an agent when a "
            "session switches provider.",
            _object(
                ["session"],
                session=_SESSION,
                budget_tokens=_count(
                    HANDOFF_TOKENS, 200_000, "Tokens the summary may take.", 1_000
                ),
            ),
            handoff,
            title="Hand a session over",
        ),
    ]


def _search(engine: Engine, args: dict[str, Any]) -> dict[str, Any]:
    from avatar.cli.library_commands import parse_age

    since = parse_age(args["since"], "since") if "since" in args else None
    limit, offset = args.get("limit", 20), args.get("offset", 0)
    hits = engine.library.search(
        args["query"],
        provider=args.get("provider"),
        all_projects=args.get("all_projects", False),
        since=since,
        limit=limit,
        offset=offset,
    )
    found: dict[str, Any] = {"sessions": [h.to_public() for h in hits]}
    found["next_offset"] = offset + len(hits) if len(hits) == limit else None
    return _warned(engine, found)


def _list(engine: Engine, args: dict[str, Any]) -> dict[str, Any]:
    from avatar.cli.sessions import listed

    every = engine.library.sessions(args.get("provider"), any_cwd=args.get("all_projects", False))
    limit, offset = args.get("limit", 50), args.get("offset", 0)
    page = every[offset : offset + limit]
    links = engine.library.lineage()
    found: dict[str, Any] = {"sessions": [listed(s, links) for s in page], "total": len(every)}
    found["next_offset"] = offset + len(page) if offset + len(page) < len(every) else None
    return _warned(engine, found)


def _warned(engine: Engine, found: dict[str, Any]) -> dict[str, Any]:
    warnings = engine.library.warnings()
    if warnings:
        found["warnings"] = warnings
    return found


def _show(engine: Engine, args: dict[str, Any]) -> str:
    info = engine.library.find(args["session"])
    transcript = engine.library.transcript(info)
    first = args.get("from_message", 1)
    label = info.name or info.title
    head = f"{info.provider} session {info.id}" + (f" — {label}" if label else "")
    total = len(transcript.messages)
    if first > max(total, 1):
        return f"{head}\n\nthe session has {total} messages: from_message {first} is past its end"
    blocks, last = page(
        transcript, first, args.get("max_messages", 50), args.get("max_chars", PAGE_CHARS)
    )
    shown = f"messages {first}-{last} of {total}" if total else "no messages"
    more = f"\n(more: from_message={last + 1})" if last < total else ""
    return f"{head}\n{shown}\n\n{blocks}{more}"


def page(transcript: Transcript, first: int, count: int, chars: int) -> tuple[str, int]:
    """Messages `first`.. of `transcript` as `session show` renders them, at most `count` of
    them and about `chars` characters (one message longer than that is cut in its middle);
    the text and the number of the last message in it."""
    from avatar.cli.sessions import render_transcript

    blocks: list[str] = []
    used, last = 0, first - 1
    for n, message in enumerate(transcript.messages[first - 1 : first - 1 + count], first):
        block = render_transcript(replace(transcript, messages=[message], skipped_lines=0), n)
        if blocks and used + len(block) > chars:
            break
        if len(block) > chars:
            cut = f"\n[… {len(block) - chars:,} characters cut …]\n"
            block = block[: chars // 2] + cut + block[-chars // 2 :]
        blocks.append(block)
        used, last = used + len(block), n
    return "\n".join(blocks), last
