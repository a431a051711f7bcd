"""Gemini CLI's own session store: `~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`.

`GEMINI_CLI_HOME` replaces the home directory. `~/.gemini/projects.json` maps each project
directory to its short name (a `.project_root` file inside `tmp/<project>/` says the same).
A session file is a log of records, replayed the way Gemini CLI replays it: a metadata record
(`sessionId`, `projectHash`, `startTime`, …), message records (keyed by `id`; a later record
with the same id replaces the earlier), `{"$set": {…}}` updates (a `messages` list replaces
all messages) and `{"$rewindTo": id}` (drops that message and everything after it). Older
versions wrote one pretty-printed `session-*.json` document instead; both are read.

An archived session goes back into the chats of the new project directory (registered in
`projects.json` when Gemini CLI has not seen it), its `projectHash` that directory's.
A name is Gemini CLI's own `summary` record. Deleting is Gemini CLI's own `--delete-session`
(`avatar.bridges.acp.own_cli`): this store deletes no file itself.
"""

from __future__ import annotations

import builtins
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from avatar.core.errors import SessionNotFoundError
from avatar.core.fileio import append_line, atomic_write, open_regular
from avatar.core.ids import sha256_hex
from avatar.policy.state import new_names
from avatar.sessions.filestore import (
    JsonlSessionStore,
    Summary,
    candidate,
    listdir,
    same_dir_keys,
    unsafe_id,
)
from avatar.sessions.jsonl import (
    LIST_LINE_CAP,
    TRANSCRIPT_LINE_CAP,
    LineStats,
    blocks_text,
    is_injected,
    iter_records,
    mtime_utc,
    parse_time,
    title_from,
)
from avatar.sessions.relocate import check_names, one_file, placed, set_if_present
from avatar.sessions.store import FileWrites
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage

# Gemini CLI's own rule for user content that is not part of the conversation.
INJECTED_PREFIXES = ("/", "?", "<session_context>", "<hook_context>")
# A legacy whole-document `.json` session is read only up to this size.
LEGACY_JSON_CAP = 16 << 20


def gemini_dir(env: Any, home: Path) -> Path:
    """`$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`."""
    base = env.get("GEMINI_CLI_HOME")
    return (Path(base).expanduser() if base else home) / ".gemini"


class _Log:
    """The replayed state of one session file: metadata and messages in order."""

    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}
        self.messages: dict[str, dict[str, Any]] = {}

    def feed(self, record: dict[str, Any]) -> None:
        rewind = record.get("$rewindTo")
        if isinstance(rewind, str):
            if rewind in self.messages:
                ids = list(self.messages)
                for mid in ids[ids.index(rewind) :]:
                    del self.messages[mid]
            else:
                self.messages.clear()
        elif isinstance(record.get("id"), str):
            self.messages[record["id"]] = record
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if isinstance(update.get("messages"), list):
                self.messages.clear()
                self._add(update["messages"])
            self.meta.update({k: v for k, v in update.items() if k != "messages"})
        elif _is_metadata(record):
            self.meta.update({k: v for k, v in record.items() if k != "messages"})
            if isinstance(record.get("messages"), list):
                self._add(record["messages"])

    def _add(self, messages: list[Any]) -> None:
        for message in messages:
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self.messages[message["id"]] = message

    def conversation(self) -> Iterator[tuple[str, dict[str, Any], str]]:
        """`(role, record, text)` for each user or model message that is part of the chat."""
        for record in self.messages.values():
            kind = record.get("type")
            text = _content_text(record.get("content"))
            if kind == "user":
                if not is_injected(text, INJECTED_PREFIXES):
                    yield "user", record, text
            elif kind == "gemini" and (text.strip() or record.get("toolCalls")):
                yield "assistant", record, text


def _is_metadata(record: dict[str, Any]) -> bool:
    return isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)


def _content_text(content: Any) -> str:
    # A string, a part ({"text": …}) or a list of parts; functionCall/Response parts carry no text.
    if isinstance(content, dict):
        content = [content]
    return blocks_text(content, kinds=("text",))


def _result_text(result: Any) -> str:
    # A tool result is a string, a list of parts (functionResponse or text) or one object.
    if isinstance(result, str):
        return result
    parts = result if isinstance(result, list) else [result]
    out = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        response = part.get("functionResponse")
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict):
                value = body.get("output", body.get("error", body))
                out.append(value if isinstance(value, str) else json.dumps(value))
        elif isinstance(part.get("text"), str):
            out.append(part["text"])
    return "\n".join(out)


class GeminiStore(JsonlSessionStore):
    """Gemini CLI chat recordings (the only way to list Gemini sessions: no session/list):
    read, archived and restored."""

    cache_name = "sessions-gemini"
    kind = "gemini"

    def __init__(self, provider: str, env: Any, avatar_home: Path) -> None:
        super().__init__(provider, env, avatar_home)
        self._cwd_of: dict[str, str] = {}  # session file → its project directory

    def root(self) -> Path:
        """`<gemini dir>/tmp`."""
        return gemini_dir(self.env, self.home()) / "tmp"

    def _projects(self) -> dict[str, str]:
        """Short project name → project directory (projects.json, then `.project_root` files)."""
        names: dict[str, str] = {}
        try:
            data = json.loads((gemini_dir(self.env, self.home()) / "projects.json").read_bytes())
            projects = data.get("projects") if isinstance(data, dict) else None
        except (OSError, ValueError):
            projects = None
        if isinstance(projects, dict):
            for cwd, short in projects.items():
                if isinstance(short, str) and isinstance(cwd, str):
                    names[short] = cwd
        return names

    def chats_dir(self, cwd: str) -> Path:
        """`tmp/<project>/chats` of project directory `cwd`, registering the project in
        `projects.json` (and its `.project_root` marker) when Gemini CLI has not seen it."""

        path = gemini_dir(self.env, self.home()) / "projects.json"
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        projects = data.setdefault("projects", {})
        if not isinstance(projects, dict):
            projects = data["projects"] = {}
        short = projects.get(cwd)
        if not isinstance(short, str) or not short or "/" in short or short.startswith("."):
            taken = set(self._projects()) | {e.name for e in listdir(self.root())}
            short = next(n for n in new_names(Path(cwd)) if n not in taken)
            projects[cwd] = short
            atomic_write(path, (json.dumps(data, indent=2) + "\n").encode())
            (self.root() / short).mkdir(parents=True, exist_ok=True)
            atomic_write(self.root() / short / ".project_root", cwd.encode())
        return self.root() / short / "chats"

    def session_files(self, cwd: Path | None) -> Iterable[str]:
        """`session-*` files in the chats of the cwd's project, or of every project."""
        projects = self._projects()
        owners: dict[str, str | None] = {}
        for entry in listdir(self.root()):
            if entry.is_dir(follow_symlinks=False):
                name = entry.name
                # The marker first: inside an agent's walls it stays read-only, while
                # projects.json is Gemini's to rewrite (it could name another project).
                owners[name] = _read_marker(Path(entry.path, ".project_root")) or projects.get(name)
        if cwd is not None:
            keys = same_dir_keys(cwd)
            # Before short names, project directories were named by the path's SHA-256.
            hashed = {sha256_hex(k) for k in keys}
            owners = {
                name: owner or os.path.normpath(str(cwd))
                for name, owner in owners.items()
                if name in hashed or (owner is not None and os.path.normpath(owner) in keys)
            }
        for name, owner in owners.items():
            project = self.root() / name
            for entry in listdir(project / "chats"):
                if entry.name.startswith("session-") and entry.name.endswith((".jsonl", ".json")):
                    if owner is not None:
                        self._cwd_of[entry.path] = owner
                    if candidate(entry):
                        yield entry.path

    def named_files(self, session_id: str) -> Iterator[str]:
        """`session-<time>-<first 8 of the id>.json(l)` in each project's chats: the names
        are listed, and only the files so named are opened."""
        tails = (f"-{session_id[:8]}.jsonl", f"-{session_id[:8]}.json")
        return (p for p in self.session_files(None) if p.endswith(tails))

    def place(self, path: str, info: SessionInfo) -> None:
        """The project directory comes from the chats folder the file is in."""
        info.cwd = self._cwd_of.get(path)

    def _read_log(self, path: Path, max_line: int) -> tuple[_Log, LineStats]:
        log = _Log()
        stats = LineStats()
        with open_regular(path) as f:
            if path.suffix == ".json":
                data = f.read(LEGACY_JSON_CAP + 1)
                try:
                    doc = json.loads(data) if len(data) <= LEGACY_JSON_CAP else None
                except ValueError:
                    doc = None
                if isinstance(doc, dict):
                    log.feed(doc)
                else:
                    stats.note(1, oversized=len(data) > LEGACY_JSON_CAP)
            else:
                for record in iter_records(f, stats, max_line=max_line):
                    log.feed(record)
        return log, stats

    def summarize(self, path: Path, st: os.stat_result) -> Summary:
        """Session facts from one chat recording."""
        log, stats = self._read_log(path, LIST_LINE_CAP)
        meta = log.meta
        if "sessionId" not in meta:
            return Summary(None, [f"{path}: no session metadata, skipped"])
        bad = unsafe_id(path, meta["sessionId"])
        if bad is not None:
            return bad
        count = 0
        first_user = None
        model = None
        for role, record, text in log.conversation():
            count += 1
            if role == "user" and first_user is None:
                first_user = text
            if role == "assistant" and isinstance(record.get("model"), str):
                model = record["model"]
        if count == 0:
            # Gemini CLI records a session at start-up; it hides those never used, and so do we.
            return Summary(None, stats.warnings(path))
        summary = meta.get("summary")
        info = SessionInfo(
            id=meta["sessionId"],
            provider=self.provider,
            title=title_from(summary if isinstance(summary, str) else None)
            or title_from(first_user),
            created=parse_time(meta.get("startTime")) or mtime_utc(st.st_mtime),
            updated=parse_time(meta.get("lastUpdated")) or mtime_utc(st.st_mtime),
            messages=count,
            model=model,
        )
        return Summary(info, stats.warnings(path))

    def read_transcript(self, info: SessionInfo) -> Transcript:
        """Every message of the chat, tool calls and their results included."""
        assert info.path is not None
        try:
            log, stats = self._read_log(Path(info.path), TRANSCRIPT_LINE_CAP)
        except OSError as e:
            raise SessionNotFoundError(f"cannot read session {info.id}: {e.strerror}") from None
        messages: list[TranscriptMessage] = []
        for role, record, text in log.conversation():
            stamp = parse_time(record.get("timestamp"))
            if role == "user":
                messages.append(TranscriptMessage(role="user", text=text, timestamp=stamp))
                continue
            calls = [c for c in record.get("toolCalls") or [] if isinstance(c, dict)]
            messages.append(
                TranscriptMessage(
                    role="assistant",
                    text=text,
                    timestamp=stamp,
                    tool_calls=[
                        ToolCall(
                            id=c.get("id"),
                            name=str(c.get("name") or "tool"),
                            input=c.get("args") if isinstance(c.get("args"), dict) else None,
                        )
                        for c in calls
                    ],
                )
            )
            for call in calls:
                if call.get("result") is not None or call.get("status") in ("error", "cancelled"):
                    messages.append(
                        TranscriptMessage(
                            role="tool",
                            text=_result_text(call.get("result")),
                            tool_call_id=call.get("id"),
                            is_error=call.get("status") in ("error", "cancelled"),
                            timestamp=stamp,
                        )
                    )
        return Transcript(info=info, messages=messages, skipped_lines=stats.skipped)

    def rename(self, info: SessionInfo, name: str) -> None:
        """The session's `summary`, which Gemini CLI shows as its name (`--list-sessions`,
        `/resume`): a `{"$set": {"summary": …}}` record appended to the recording, as Gemini
        CLI writes its own summaries (a legacy `.json` document gets the key itself)."""
        assert info.path is not None
        path = Path(info.path)
        if path.suffix == ".jsonl":
            line = json.dumps({"$set": {"summary": name}}, ensure_ascii=False) + "\n"
            append_line(path, line.encode())
            return
        try:
            document = json.loads(path.read_bytes())
        except (OSError, ValueError) as e:
            raise SessionNotFoundError(f"cannot read session {info.id}: {e}") from None
        if not isinstance(document, dict):
            raise SessionNotFoundError(f"cannot read session {info.id}: not a session document")
        document["summary"] = name
        atomic_write(path, json.dumps(document, ensure_ascii=False, indent=2).encode())

    def archive_files(self, info: SessionInfo) -> builtins.list[tuple[str, Path]]:
        """The chat recording, by its file name."""
        return one_file(info)

    def restore(
        self, session_id: str, files: Mapping[str, bytes], old_cwd: str | None, new_cwd: str
    ) -> FileWrites:
        """Into the chats of project `new_cwd` (registered when new); `projectHash` is
        the new directory's."""
        name_of = re.compile(rf"session-[\w.:-]*{session_id[:8]}[\w-]*\.jsonl?")
        check_names(files, self.kind, session_id, lambda name: name_of.fullmatch(name) is not None)
        base = self.chats_dir(new_cwd)
        fix = partial(set_if_present, key="projectHash", value=sha256_hex(new_cwd))
        return placed(base, files, fix)


def _read_marker(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text or None
