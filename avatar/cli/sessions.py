"""`avatar session …`: one listing and one set of session commands for every provider."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from avatar.cli.table import render_table
from avatar.errors import UsageError
from avatar.times import ago

if TYPE_CHECKING:
    from avatar.cli.commands import AppState
    from avatar.engine import Engine
    from avatar.sessions.types import SessionInfo, Transcript


def _warn(engine: Engine) -> None:
    for line in engine.warnings():
        sys.stderr.write(f"warning: {line}\n")


def list_sessions(
    state: AppState,
    provider: str | None,
    *,
    limit: int,
    json_out: bool,
    any_cwd: bool,
    refresh: bool = False,
) -> int:
    """Print the session table (newest first) or the JSON array of DESIGN §3; with
    `refresh`, the agent is asked for its sessions too (`session/list`)."""
    engine = state.engine()
    if refresh:
        import asyncio

        if provider is None:
            raise UsageError("--refresh asks one agent: name it with --provider")

        async def ask(name: str) -> None:
            try:
                await engine.refresh(name)
            finally:
                await engine.close()

        asyncio.run(ask(provider))
    sessions = engine.sessions(provider, any_cwd=any_cwd)
    _warn(engine)
    shown = sessions if limit == 0 else sessions[:limit]
    if json_out:
        # One object per line: still a JSON array, and `indent` would switch json to its
        # pure-Python encoder (~20 µs a session, noticeable at thousands).
        lines = ",\n".join(json.dumps(s.to_public(), ensure_ascii=False) for s in shown)
        sys.stdout.write(f"[\n{lines}\n]\n" if lines else "[]\n")
        return 0
    if not sessions:
        where = "any directory" if any_cwd else str(engine.cwd)
        sys.stderr.write(f"no sessions in {where}\n")
        return 0
    rows = [
        [s.provider, s.id, (s.title or "").replace("\n", " "), ago(s.updated), str(s.messages)]
        for s in shown
    ]
    sys.stdout.write(
        render_table(["provider", "id", "title", "updated", "messages"], rows, shrink=2)
    )
    if len(shown) < len(sessions):
        sys.stderr.write(f"({len(sessions) - len(shown)} more; --limit 0 shows all)\n")
    return 0


def _find(state: AppState, ref: str) -> tuple[Engine, SessionInfo]:
    engine = state.engine()
    info = engine.find(ref, state.provider)
    return engine, info


def show_info(state: AppState, ref: str, *, json_out: bool) -> int:
    """Facts about one session."""
    engine, info = _find(state, ref)
    _warn(engine)
    data = info.to_public()
    if info.path:
        data["path"] = info.path
    if json_out:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
        return 0
    for key, value in data.items():
        sys.stdout.write(f"{key:9} {value if value is not None else '-'}\n")
    return 0


def render_transcript(transcript: Transcript) -> str:
    """A transcript as readable text: one block per message."""
    out = []
    for m in transcript.messages:
        label = {"user": "you", "assistant": "assistant", "tool": "tool", "system": "system"}
        head = f"── {label[m.role]}" + (" (error)" if m.is_error else "")
        body = [m.text.rstrip()] if m.text.strip() else []
        for call in m.tool_calls:
            arg = call.input if isinstance(call.input, str) else json.dumps(call.input)
            body.append(f"→ {call.name} {arg}")
        out.append(head + "\n" + "\n".join(body))
    if transcript.skipped_lines:
        out.append(f"({transcript.skipped_lines} unreadable lines skipped)")
    return "\n\n".join(out) + "\n"


def show_transcript(state: AppState, ref: str) -> int:
    """Print a session's transcript."""
    engine, info = _find(state, ref)
    transcript = engine.transcript(info)
    _warn(engine)
    title = f"{info.provider} session {info.id}" + (f" — {info.title}" if info.title else "")
    sys.stdout.write(title + "\n\n" + render_transcript(transcript))
    return 0


def delete(state: AppState, ref: str, *, yes: bool) -> int:
    """Delete a session after confirmation."""
    engine, info = _find(state, ref)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("refusing to delete without confirmation; pass --yes")
        import click

        if not click.confirm(
            f"delete {info.provider} session {info.id} ({info.title or 'untitled'})?"
        ):
            return 1
    import asyncio

    async def go() -> None:
        try:
            await engine.delete(info)
        finally:
            await engine.close()

    asyncio.run(go())
    sys.stderr.write(f"deleted {info.provider} session {info.id}\n")
    return 0


def fork(state: AppState, ref: str) -> int:
    """Fork a session on its own provider and print the new id."""
    import asyncio

    from avatar.cli.render import LineRenderer

    async def go() -> int:
        engine = state.engine()
        engine.subscribe(LineRenderer(json_out=False).on_event)
        try:
            started = await engine.fork(ref)
        finally:
            await engine.close()
        sys.stdout.write(started.session_id + "\n")
        return 0

    return asyncio.run(go())
