"""Codex's own session store: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

`CODEX_HOME` defaults to `~/.codex`. Each line is `{"timestamp", "type", "payload"}`; the first
is `session_meta` (id, cwd, start time), `turn_context` lines carry the model, and the
conversation is in `response_item` lines (`message`, `function_call`, `function_call_output`,
…). `event_msg` lines repeat the conversation for UIs and are ignored. Thread names given with
`/rename` live in `$CODEX_HOME/session_index.jsonl`.

Besides reading: an imported conversation is written as a rollout of a `session_meta` line
and `message` items (what the pinned codex-acp loads), a name as a `thread_name` line, and an
archived rollout goes back under the same date folders with its `cwd` moved.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import os
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from avatar.core.fileio import append_line, atomic_write
from avatar.core.version import __version__
from avatar.sessions.filestore import (
    FileFold,
    JsonlSessionStore,
    Summary,
    candidate,
    fold_transcript,
    listdir,
    unsafe_id,
)
from avatar.sessions.jsonl import (
    LIST_LINE_CAP,
    blocks_text,
    is_injected,
    later,
    parse_line,
    parse_time,
    read_records,
    title_from,
)
from avatar.sessions.relocate import check_names, move_key, moved, packed_file, placed
from avatar.sessions.store import FileWrites
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage

# User-role messages codex builds itself: environment, instructions, aborted-turn markers.
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions for",
    "<INSTRUCTIONS>",
    "<skills_instructions>",
    "<apps_instructions>",
    "<plugins_instructions>",
    "<collaboration_mode>",
    "<personality_spec>",
    "<startup_context>",
    "<subagent_notification>",
    "<turn_aborted>",
    "<user_shell_command>",
)

_LIST_WANT = re.compile(rb'"type"\s*:\s*"(?:session_meta|turn_context|message)"')
_META = re.compile(rb'"type"\s*:\s*"session_meta"')
_INSTRUCTIONS = re.compile(rb',\s*"base_instructions"\s*:')
_DATE_PART = re.compile(r"\d{2,4}")
_TOOL_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def codex_home(env: Any, home: Path) -> Path:
    """`$CODEX_HOME`, else `~/.codex`."""
    configured = env.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else home / ".codex"


class _Fold(FileFold):
    """Walks a rollout's lines once, for a listing summary or a full transcript."""

    def __init__(self, keep: bool) -> None:
        super().__init__(keep)
        self.session_id: Any = None
        self.meta_seen = False
        self.subagent = False
        self._assistant: TranscriptMessage | None = None

    def feed(self, line: dict[str, Any]) -> None:
        kind = line.get("type")
        payload = line.get("payload")
        if not isinstance(payload, dict):
            return
        stamp = parse_time(line.get("timestamp"))
        self.updated = later(self.updated, stamp)
        if kind == "session_meta":
            if not self.meta_seen:  # a resumed or forked rollout may repeat its parent's meta
                self.meta_seen = True
                self.session_id = payload.get("id") or payload.get("session_id")
                source = payload.get("source")
                # Threads codex spawns itself (reviews, sub-agents) are not user sessions.
                self.subagent = isinstance(source, dict) and "subagent" in source
                cwd = payload.get("cwd")
                self.cwd = cwd if isinstance(cwd, str) else None
                self.created = parse_time(payload.get("timestamp")) or stamp
        elif kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model:
                self.model = model
        elif kind == "response_item":
            self._item(payload, stamp)

    def _item(self, item: dict[str, Any], stamp: datetime | None) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = blocks_text(item.get("content"), kinds=("input_text", "output_text", "text"))
            if role == "user":
                self._assistant = None
                if is_injected(text, INJECTED_PREFIXES):
                    return
                self.count += 1
                self.first_user = self.first_user or text
                if self.keep:
                    self.messages.append(TranscriptMessage(role="user", text=text, timestamp=stamp))
            elif role == "assistant":
                self.count += 1
                if self.keep:
                    message = TranscriptMessage(role="assistant", text=text, timestamp=stamp)
                    self._assistant = message
                    self.messages.append(message)
        elif not self.keep:
            return
        elif kind in _TOOL_CALLS:
            call = ToolCall(id=item.get("call_id"), name=_tool_name(item), input=_tool_input(item))
            if self._assistant is None:
                self._assistant = TranscriptMessage(role="assistant", timestamp=stamp)
                self.messages.append(self._assistant)
            self._assistant.tool_calls.append(call)
        elif kind in _TOOL_OUTPUTS:
            text, failed = _tool_output(item.get("output"))
            self.messages.append(
                TranscriptMessage(
                    role="tool",
                    text=text,
                    tool_call_id=item.get("call_id"),
                    is_error=failed,
                    timestamp=stamp,
                )
            )
            self._assistant = None


def _parse_for_listing(line: bytes) -> dict[str, Any] | None:
    """Parse a line, but decode `session_meta` only up to its (long) base instructions.

    The id, start time and cwd come first in the payload and the 15-40 KB of instructions
    after them are never listed; raw `,"base_instructions":` cannot occur inside a JSON
    string (its quotes would be escaped), so the cut always falls between two fields.
    """
    if line.startswith(b"{") and _META.search(line):
        cut = _INSTRUCTIONS.search(line)
        if cut is not None:
            head = parse_line(line[: cut.start()] + b"}}")
            if head is not None:
                return head
    return parse_line(line)


def _tool_name(item: dict[str, Any]) -> str:
    if item.get("type") == "local_shell_call":
        return "shell"
    return str(item.get("name") or "tool")


def _tool_input(item: dict[str, Any]) -> dict[str, Any] | str | None:
    raw = item.get("arguments", item.get("input", item.get("action")))
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return raw
        return parsed if isinstance(parsed, dict) else raw
    return raw if isinstance(raw, dict) else None


def _tool_output(output: Any) -> tuple[str, bool]:
    # Either a plain string or {"content": str | parts, "success": bool}.
    if isinstance(output, dict):
        text = blocks_text(output.get("content"), kinds=("input_text", "output_text", "text"))
        return text, output.get("success") is False
    if isinstance(output, str):
        return output, False
    return blocks_text(output, kinds=("input_text", "output_text", "text")), False


class CodexStore(JsonlSessionStore):
    """Codex rollouts (written by codex-acp, `codex exec` and the codex TUI alike): read,
    imported into, named, archived and restored."""

    cache_name = "sessions-codex"
    kind = "codex"

    def root(self) -> Path:
        """`$CODEX_HOME/sessions`."""
        return codex_home(self.env, self.home()) / "sessions"

    def session_files(self, cwd: Path | None) -> Iterable[str]:
        """Every rollout file; the cwd is only known from inside each file."""
        return self._walk(self.root(), depth=3)

    def named_files(self, session_id: str) -> Iterator[str]:
        """`rollout-<time>-<id>.jsonl` in the date folders: their names are listed, no file
        is opened but these."""
        tail = f"-{session_id}.jsonl"
        return (p for p in self._walk(self.root(), depth=3) if p.endswith(tail))

    def _walk(self, d: Path | str, depth: int) -> Iterator[str]:
        for entry in listdir(d):
            if depth:
                if _DATE_PART.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
                    yield from self._walk(entry.path, depth - 1)
            elif (
                entry.name.startswith("rollout-")
                and entry.name.endswith(".jsonl")
                and candidate(entry)
            ):
                yield entry.path

    def summarize(self, path: Path, st: os.stat_result) -> Summary:
        """Session facts from one rollout, parsing only the lines that matter."""
        fold = _Fold(keep=False)
        stats = fold.read(path, LIST_LINE_CAP, want=_LIST_WANT, parse=_parse_for_listing)
        if not fold.meta_seen:
            return Summary(None, [f"{path}: no session_meta line, skipped"])
        bad = unsafe_id(path, fold.session_id)
        if bad is not None:
            return bad
        if fold.count == 0 or fold.subagent:
            # Never used, or codex's own helper thread.
            return Summary(None, stats.warnings(path))
        info = fold.info(fold.session_id, self.provider, title_from(fold.first_user), st)
        return Summary(info, stats.warnings(path))

    def annotate(self, sessions: builtins.list[SessionInfo]) -> builtins.list[SessionInfo]:
        """Sessions titled with their `/rename` thread names where codex recorded one."""
        names = self._thread_names() if sessions else {}
        for info in sessions:
            if info.id in names:
                info.title = names[info.id]
        return sessions

    def _thread_names(self) -> dict[str, str]:
        index = codex_home(self.env, self.home()) / "session_index.jsonl"
        try:
            records, _ = read_records(index, max_line=LIST_LINE_CAP)
        except OSError:
            return {}
        names: dict[str, str] = {}
        for rec in records:
            sid, name = rec.get("id"), title_from(rec.get("thread_name"))
            if isinstance(sid, str) and name:
                names[sid] = name
        return names

    def read_transcript(self, info: SessionInfo) -> Transcript:
        """Every message of the rollout, tool calls and their outputs included."""
        return fold_transcript(info, _Fold(keep=True))

    def write_import(
        self, conversation: Transcript, cwd: Path, model: str | None = None
    ) -> SessionInfo:
        """A new rollout under today's date folder of `$CODEX_HOME/sessions`, where
        codex-acp looks."""

        sid = str(uuid.uuid4())
        now = datetime.now(UTC)
        stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        # codex reads no rollout whose metadata lacks `cli_version` or `source`.
        meta = {"id": sid, "timestamp": stamp, "cwd": str(cwd), "originator": "avatar-import"}
        meta |= {"cli_version": __version__, "source": "unknown"}
        lines = [{"timestamp": stamp, "type": "session_meta", "payload": meta}]
        for m in conversation.messages:
            part = {"type": "input_text" if m.role == "user" else "output_text", "text": m.text}
            item = {"type": "message", "role": m.role, "content": [part]}
            lines.append({"timestamp": stamp, "type": "response_item", "payload": item})
        day = self.root() / now.strftime("%Y/%m/%d")
        path = day / f"rollout-{now.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
        data = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
        atomic_write(path, data.encode())
        return self._checked_import(
            self.listed(path), conversation, partial(path.unlink, missing_ok=True)
        )

    def rename(self, info: SessionInfo, name: str) -> None:
        """Where codex keeps the names its own `/rename` (and codex-acp's
        `session/set_title`) gives: a `thread_name` line in `$CODEX_HOME/session_index.jsonl`,
        and the thread's `name` in its state database, which codex's own list reads."""
        home = codex_home(self.env, self.home())
        stamp = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        record = {"id": info.id, "thread_name": name, "updated_at": stamp}
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        append_line(home / "session_index.jsonl", line.encode())
        name_thread(home, info.id, name)

    def archive_files(self, info: SessionInfo) -> builtins.list[tuple[str, Path]]:
        """The rollout, named with its date folders: codex finds rollouts by walking them."""
        path = packed_file(info)
        return [(path.relative_to(self.root()).as_posix(), path)]

    def restore(
        self, session_id: str, files: Mapping[str, bytes], old_cwd: str | None, new_cwd: str
    ) -> FileWrites:
        """Under the same date folders of this `CODEX_HOME`; the `cwd` of `session_meta`
        and `turn_context` (and the workspace roots) move."""
        rollout = re.compile(rf"\d{{2,4}}/\d{{2}}/\d{{2}}/rollout-[\w.:-]*{session_id}\.jsonl")
        check_names(files, self.kind, session_id, lambda name: rollout.fullmatch(name) is not None)
        fix = partial(_moved_project, old=old_cwd, new=new_cwd)
        return placed(self.root(), files, fix)


def _moved_project(entry: dict[str, Any], old: str | None, new: str) -> bool:
    """A rollout line with its project directory moved from `old` to `new`."""
    payload = entry.get("payload")
    if entry.get("type") not in ("session_meta", "turn_context") or not isinstance(payload, dict):
        return False
    changed = move_key(payload, "cwd", old, new)
    roots = payload.get("runtime_workspace_roots")
    if isinstance(roots, list):
        new_roots = [moved(r, old, new) for r in roots]
        changed |= new_roots != roots
        payload["runtime_workspace_roots"] = new_roots
    return changed


#: codex's state database (`state_<version>.sqlite`), its `threads` table.
_STATE_DB = re.compile(r"state_(\d+)\.sqlite")


def name_thread(home: Path, session_id: str, name: str) -> bool:
    """Set the `name` of thread `session_id` in codex's newest state database, as codex-acp's
    `session/set_title` does (measured on codex 0.166); False when there is no such database,
    table, column or row (a codex that keeps none: the index line is what it reads)."""
    import sqlite3

    found = [(int(m.group(1)), e.path) for e in listdir(home) if (m := _STATE_DB.fullmatch(e.name))]
    if not found:
        return False
    try:
        with contextlib.closing(sqlite3.connect(max(found)[1], timeout=5.0)) as db, db:
            cursor = db.execute("UPDATE threads SET name = ? WHERE id = ?", (name, session_id))
            return cursor.rowcount > 0
    except sqlite3.Error:
        return False
