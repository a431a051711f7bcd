"""`avatar session …`: one listing and one set of session commands for every provider."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from avatar.cli.output.table import render_table
from avatar.cli.output.tree import lineage_order, tree_title
from avatar.core.errors import AvatarError, UsageError
from avatar.core.times import ago
from avatar.policy.terminal_text import for_terminal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from avatar.cli.state import AppState
    from avatar.core.events import BaseEvent
    from avatar.engine.engine import Deleted, Engine
    from avatar.sessions.types import SessionInfo, Transcript


#: After the title of a session whose provider's files are gone (avatar's copy is left).
GONE = " [files gone]"


def warn_skipped(engine: Engine) -> None:
    """One `warning:` line on stderr for each file the stores skipped while reading."""
    for line in engine.library.warnings():  # (they quote file names and content from the stores)
        sys.stderr.write(for_terminal(f"warning: {line}\n", sys.stderr))


def list_sessions(
    state: AppState,
    provider: str | None,
    *,
    limit: int = 50,
    json_out: bool = False,
    any_cwd: bool = False,
    refresh: bool = False,
    tree: bool = False,
) -> int:
    """Print the session table (newest first) or the JSON array of docs/design.md §3 (the
    defaults: `avatar session list` with no option of its own); with
    `refresh`, the agent is asked for its sessions too (`session/list`); with `tree`,
    sessions under the ones they were handed over or forked from."""
    engine = state.engine()
    if refresh:
        import asyncio

        if provider is None:
            raise UsageError("--refresh asks one agent: name it with --provider")

        async def ask(name: str) -> None:
            try:
                await engine.agent.refresh(name)
            finally:
                await engine.close()

        asyncio.run(ask(provider))
    sessions = engine.sessions(provider, any_cwd=any_cwd)
    warn_skipped(engine)
    shown = sessions if limit == 0 else sessions[:limit]
    links = engine.library.lineage() if json_out or tree else {}  # the table shows none
    if json_out:
        # One object per line: still a JSON array, and `indent` would switch json to its
        # pure-Python encoder (~20 µs a session, noticeable at thousands).
        lines = ",\n".join(json.dumps(listed(s, links), ensure_ascii=False) for s in shown)
        sys.stdout.write(f"[\n{lines}\n]\n" if lines else "[]\n")
        return 0
    if not sessions:
        where = "any directory" if any_cwd else str(engine.cwd)
        sys.stderr.write(f"no sessions in {where}\n")
        return 0
    parents = {k: v.parent for k, v in links.items()} if tree else {}
    rows = []
    worktrees = any(s.worktree for s in shown)  # (a column only where some session has one)
    for depth, s in lineage_order(shown, parents):
        # (inert before the table measures it: a hostile title cannot skew the columns)
        label = (s.name or s.title or "").replace("\n", " ") + (GONE if s.gone else "")
        label = for_terminal(label, sys.stdout)
        title = tree_title(depth, label)
        rows.append([s.provider, s.id, title, ago(s.updated), str(s.messages)])
        if worktrees:
            rows[-1].append(for_terminal((s.worktree or "").rsplit("/", 1)[-1], sys.stdout))
    heads = ["provider", "id", "title", "updated", "messages"] + ["worktree"] * worktrees
    table = render_table(heads, rows, shrink=2)
    sys.stdout.write(for_terminal(table, sys.stdout))
    if len(shown) < len(sessions):
        sys.stderr.write(f"({len(sessions) - len(shown)} more; --limit 0 shows all)\n")
    return 0


def listed(info: SessionInfo, links: Mapping[str, Any]) -> dict[str, object]:
    """A session as `session list --json` gives it: `to_public()`, with `parent` and
    `children` where the session has lineage (`links`: `engine.library.lineage()`)."""
    data: dict[str, object] = info.to_public()
    link = links.get(f"{info.provider}/{info.id}")
    if link is not None:
        data["parent"], data["children"] = link.parent, list(link.children)
    return data


def _find(state: AppState, ref: str) -> tuple[Engine, SessionInfo]:
    engine = state.engine()
    info = engine.find(ref, state.provider)
    return engine, info


def show_info(state: AppState, ref: str, *, json_out: bool) -> int:
    """Facts about one session."""
    engine, info = _find(state, ref)
    warn_skipped(engine)
    data = listed(info, engine.library.lineage())
    if info.path:
        data["path"] = info.path
    data = engine.registry.secrets().mask_data(data)
    if json_out:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
        return 0
    for key, value in data.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value) or None
        line = f"{key:9} {value if value is not None else '-'}\n"
        sys.stdout.write(for_terminal(line, sys.stdout))
    return 0


def render_transcript(transcript: Transcript, first: int = 1) -> str:
    """A transcript as readable text: one block per message, numbered from `first` (a page
    of a longer one: `avatar mcp`'s `show_session`)."""
    out = []
    label = {"user": "you", "assistant": "assistant", "tool": "tool", "system": "system"}
    for n, m in enumerate(transcript.messages, first):  # `fork --at N` counts the same way
        head = f"── {n}. {label[m.role]}" + (" (error)" if m.is_error else "")
        body = [m.text.rstrip()] if m.text.strip() else []
        for call in m.tool_calls:
            arg = call.input if isinstance(call.input, str) else json.dumps(call.input)
            body.append(f"→ {call.name} {arg}")
        out.append(head + "\n" + "\n".join(body))
    if transcript.skipped_lines:
        out.append(f"({transcript.skipped_lines} unreadable lines skipped)")
    return "\n\n".join(out) + "\n"


def show_transcript(state: AppState, ref: str) -> int:
    """Print a session's transcript, secrets masked."""
    engine, info = _find(state, ref)
    transcript = engine.transcript(info)
    warn_skipped(engine)
    label = info.name or info.title
    title = f"{info.provider} session {info.id}" + (f" — {label}" if label else "")
    text = engine.registry.secrets().mask(title + "\n\n" + render_transcript(transcript))
    sys.stdout.write(for_terminal(text, sys.stdout))
    return 0


def delete(
    state: AppState,
    ref: str,
    *,
    yes: bool,
    forget: bool = False,
    keep_copy: bool = False,
    worktree: bool = False,
    discard: bool = False,
) -> int:
    """Delete a session after confirmation (`forget`: avatar's record of it only); with
    `worktree`, the git worktree it ran in too (else that is kept, and said), refused while
    that holds work not committed unless `discard` throws it away (checked before anything is
    deleted)."""
    engine, info = _find(state, ref)
    from avatar.server.client import live_ids

    if info.id in live_ids():  # (its agent and its clients would go on writing it)
        raise AvatarError(
            f"{info.provider} session {info.id} is live in the running server (avatar ps): "
            "delete it once its clients have left"
        )
    if discard and not worktree:
        raise UsageError("--discard goes with --worktree (it throws away the worktree's work)")
    if worktree and not info.worktree:
        raise UsageError(f"--worktree: {info.provider} session {info.id} has no worktree")
    thrown = engine.library.check_worktree(info, discard) if worktree else []
    what = "avatar's record of" if forget else "delete"
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError("refusing to delete without confirmation; pass --yes")
        import click

        question = f"{what} {info.provider} session {info.id} ({info.title or 'untitled'})"
        question += f" and its worktree {info.worktree}" if worktree else ""
        if thrown:
            question += f", throwing away its work not committed ({', '.join(thrown)})"
        question += "?"
        if forget:
            question = "forget " + question
        if not click.confirm(for_terminal(question, sys.stderr)):
            return 1
    import asyncio

    async def go() -> Deleted:
        try:
            return await engine.delete(info, forget=forget, keep_copy=keep_copy)
        finally:
            await engine.close()

    sys.stderr.write(for_terminal(asyncio.run(go()).line() + "\n", sys.stderr))
    if worktree:
        sys.stderr.write(engine.library.remove_worktree(info, discard) + "\n")
    elif info.worktree:
        sys.stderr.write(f"kept its worktree {info.worktree} (--worktree removes it)\n")
    return 0


def fork(state: AppState, ref: str, at: int | None = None, *, from_copy: bool = False) -> int:
    """Fork a session on its own provider (whole, or up to message `at`; `from_copy`: a new
    session seeded with its whole history where the agent cannot fork); print the new id,
    alone on stdout (notices on stderr; what the agent replays is not shown)."""
    import asyncio

    from avatar.cli.output.render import LineRenderer

    notices = LineRenderer(json_out=False, out=sys.stderr)

    def shown(event: BaseEvent) -> None:
        if not event.replay:
            notices.on_event(event)

    async def go() -> int:
        engine = state.engine()
        engine.subscribe(shown)
        try:
            started = await engine.agent.fork(ref, at, from_copy=from_copy)
        finally:
            await engine.close()
        sys.stdout.write(started.session_id + "\n")
        return 0

    return asyncio.run(go())
