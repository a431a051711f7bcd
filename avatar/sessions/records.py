"""Records avatar keeps of the sessions it opens (docs/design.md §9), for providers whose own
session files avatar cannot read (any ACP agent from config or the shipped table).

- `$AVATAR_HOME/records/sessions.jsonl`: one line per change of a session's record (id,
  provider, cwd, title from the user's first words, times, message count, model); the last
  line of a session wins, a `deleted` line removes it. Append-only: concurrent runs never
  interleave a line, and a torn last line is skipped.
- `$AVATAR_HOME/records/turns/<provider>/<id>.jsonl`: the turns avatar carried (the user's
  text, the answer, tool-call titles), one message per line, for every provider, so a session
  can be shown, handed over, searched or reopened without its agent or its files.
- A session run in an avatar git worktree (`--worktree`) records its directory as `worktree`.
- Lineage: a session opened from another (a handoff, an import) records `parent` as
  `provider/id`; the parent's record gains `child` lines, read back as its `children`.

They list and resolve sessions without starting any agent; where a provider's own store is
readable, that store is the source, never these records.
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from avatar.core.errors import SessionNotFoundError
from avatar.core.fileio import append_line
from avatar.core.ids import is_valid_id
from avatar.core.times import parse_time
from avatar.policy.secrets import title_source
from avatar.sessions.handoff_marker import strip_handoff
from avatar.sessions.relocate import check_names
from avatar.sessions.store import FileWrites, SessionStore
from avatar.sessions.types import SessionInfo, ToolCall, Transcript, TranscriptMessage

TITLE_CHARS = 80
_PROVIDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def _title(text: str) -> str:
    """A title from a user's words or an agent's title for a session: secrets masked, one
    line, cut to `TITLE_CHARS`."""
    words = " ".join(title_source(text).split())
    return words if len(words) <= TITLE_CHARS else words[: TITLE_CHARS - 1] + "…"


def _fold(current: dict[tuple[str, str], dict[str, Any]], record: dict[str, Any]) -> None:
    """One record line laid over the records read so far (a deletion drops the session)."""
    key = (str(record.get("provider")), record["id"])
    if record.get("deleted"):
        current.pop(key, None)
    else:
        current[key] = {**current.get(key, {}), **record}


def _now() -> str:
    return datetime.now(UTC).isoformat()


Reading = tuple[tuple[int, int], dict[tuple[str, str], dict[str, Any]]]
#: What each records file read as (its size and mtime, then every session's record), by path,
#: shared by every `SessionRecords` of the process: a server holds an engine per live session
#: and per warm agent, and each would read the whole file again.
_READINGS: dict[Path, Reading] = {}


class SessionRecords:
    """Reads and appends avatar's own records of sessions."""

    def __init__(self, avatar_home: Path) -> None:
        self.root = avatar_home / "records"
        self.index = self.root / "sessions.jsonl"

    @property
    def _cache(self) -> Reading | None:
        return _READINGS.get(self.index)

    @_cache.setter
    def _cache(self, reading: Reading | None) -> None:
        if reading is None:
            _READINGS.pop(self.index, None)
        else:
            _READINGS[self.index] = reading

    # -- reading ------------------------------------------------------------------------

    def _lines(self) -> Iterator[dict[str, Any]]:
        try:
            data = self.index.read_bytes()
        except OSError:
            return
        for line in data.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a torn or damaged line: the ones around it still count
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                yield record

    def all(self) -> dict[tuple[str, str], dict[str, Any]]:
        """The current record of every session, by (provider, id)."""
        try:
            st = self.index.stat()
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            return {}
        if self._cache is not None and self._cache[0] == stamp:
            return self._cache[1]
        current: dict[tuple[str, str], dict[str, Any]] = {}
        for record in self._lines():
            _fold(current, record)
        self._cache = (stamp, current)
        return current

    def sessions(self, provider: str) -> list[SessionInfo]:
        """Every recorded session of `provider`."""
        return [
            SessionInfo(
                id=r["id"],
                provider=provider,
                cwd=r.get("cwd") if isinstance(r.get("cwd"), str) else None,
                title=r.get("title") if isinstance(r.get("title"), str) else None,
                created=parse_time(r.get("created")),
                updated=parse_time(r.get("updated")),
                messages=r["messages"] if isinstance(r.get("messages"), int) else 0,
                model=r.get("model") if isinstance(r.get("model"), str) else None,
                path=str(self.turns_path(provider, r["id"])),
            )
            for (p, _), r in self.all().items()
            if p == provider
        ]

    def parent(self, provider: str, session_id: str) -> tuple[str, str] | None:
        """(provider, id) of the session this one was opened from (a handoff, an import),
        from its record alone; None when it records none."""
        record = self.all().get((provider, session_id), {})
        parent = record.get("parent")
        owner, _, sid = parent.partition("/") if isinstance(parent, str) else ("", "", "")
        return (owner, sid) if owner and sid else None

    def transcript(self, info: SessionInfo) -> Transcript:
        """The turns avatar carried in a session."""
        path = self.turns_path(info.provider, info.id)
        try:
            data = path.read_bytes()
        except OSError:
            raise SessionNotFoundError(f"no record of the turns of {info.id}") from None
        messages, skipped = [], 0
        for line in data.splitlines():
            try:
                raw = json.loads(line)
                calls = [ToolCall(name=str(t)) for t in raw.get("tools", [])]
                messages.append(
                    TranscriptMessage(
                        role=raw["role"],
                        text=str(raw.get("text", "")),
                        tool_calls=calls,
                        timestamp=parse_time(raw.get("time")),
                    )
                )
            except (ValueError, KeyError, TypeError, AttributeError):
                skipped += 1
        return Transcript(info=info, messages=messages, skipped_lines=skipped)

    # -- writing ------------------------------------------------------------------------

    def turns_path(self, provider: str, session_id: str) -> Path:
        """Where avatar's copy of the turns of a session is (a usage error for a bad id)."""
        if not (_PROVIDER.fullmatch(provider) and is_valid_id(session_id)):
            raise SessionNotFoundError(f"no record of {provider} session {session_id!r}")
        return self.root / "turns" / provider / f"{session_id}.jsonl"

    def put(self, record: dict[str, Any]) -> None:
        """Append one record line (the last line of a session's wins, key by key)."""
        data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        before = self._cache
        append_line(self.index, data)
        # Every turn appends here: when the file grew by exactly this line (no other writer
        # came between), the cached reading is brought up to date instead of read again.
        self._cache = None
        try:
            st = self.index.stat()
        except OSError:
            return
        if before is not None and st.st_size == before[0][0] + len(data):
            current = dict(before[1])
            _fold(current, record)
            self._cache = ((st.st_size, st.st_mtime_ns), current)

    def opened(self, provider: str, session_id: str, cwd: str, model: str | None) -> None:
        """A session was opened (new or reopened): record it if it is not yet."""
        if (provider, session_id) in self.all():
            return
        now = _now()
        self.put(
            {"provider": provider, "id": session_id, "cwd": cwd, "created": now, "updated": now}
            | ({"model": model} if model else {})
        )

    def listed(self, info: SessionInfo) -> bool:
        """A session the agent listed itself: recorded when avatar has no record of it yet.
        True when it was new to avatar."""
        if (info.provider, info.id) in self.all():
            return False
        stamp = (info.updated or datetime.now(UTC)).isoformat()
        record = {"provider": info.provider, "id": info.id, "created": stamp, "updated": stamp}
        if info.cwd:
            record["cwd"] = info.cwd
        if info.title:  # the agent's own title: it may hold what the user first typed
            record["title"] = _title(info.title)
        self.put(record)
        return True

    def turn(
        self,
        provider: str,
        session_id: str,
        prompt: str | None,
        answer: str,
        tools: list[str],
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Messages of a turn join the copy (the prompt when sent, None then; the answer
        when the turn ends), and the record is brought up to date."""
        now = _now()
        path = self.turns_path(provider, session_id)
        lines: list[dict[str, Any]] = []
        if prompt is not None:
            lines.append({"role": "user", "text": prompt, "time": now})
        if answer or tools:
            said = {"role": "assistant", "text": answer, "tools": tools, "time": now}
            lines.append(said | (extra or {}))  # the tools' status, the usage
        if not lines:
            return
        for entry in lines:
            append_line(path, (json.dumps(entry, ensure_ascii=False) + "\n").encode())
        current = self.all().get((provider, session_id), {})
        update: dict[str, Any] = {
            "provider": provider,
            "id": session_id,
            "updated": now,
            "messages": int(current.get("messages") or 0) + len(lines),
        }
        own = strip_handoff(prompt or "")  # the copy keeps what was sent; a title, the user's words
        if not current.get("title") and own.strip():
            update["title"] = _title(own)
        self.put(update)

    def link(
        self,
        child: tuple[str, str],
        parent: tuple[str, str],
        how: str,
        imported: int | None = None,
    ) -> None:
        """Session `child` (provider, id) was opened from `parent` (`how`: handoff, import):
        the child records where it came from (the link forward is derived:
        `avatar.library.lineage`), and an import how many of its first messages it wrote."""
        record = {"provider": child[0], "id": child[1], "parent": "/".join(parent), "via": how}
        self.put(record | ({"imported": imported} if imported is not None else {}))

    def imported(self, provider: str, session_id: str) -> tuple[tuple[str, str], int] | None:
        """(the parent, how many first messages) an import wrote into this session; None
        when it was not imported."""
        record = self.all().get((provider, session_id), {})
        count, parent = record.get("imported"), self.parent(provider, session_id)
        return (parent, count) if isinstance(count, int) and parent is not None else None

    def name(self, provider: str, session_id: str, name: str) -> None:
        """The user named the session (`session rename`): avatar shows the name everywhere."""
        self.put({"provider": provider, "id": session_id, "name": name})

    def seed(
        self, provider: str, session_id: str, messages: builtins.list[TranscriptMessage]
    ) -> None:
        """A session opened as a copy of another (a fork) starts its copy with `messages`,
        the whole history it inherits, ahead of any turn of its own."""
        now = _now()
        path = self.turns_path(provider, session_id)
        data = b"".join(
            (json.dumps(_copy_line(m, now), ensure_ascii=False) + "\n").encode()
            for m in messages
            if m.role in ("user", "assistant")
        )
        if not data:
            return
        append_line(path, data)
        current = self.all().get((provider, session_id), {})
        update: dict[str, Any] = {
            "provider": provider,
            "id": session_id,
            "updated": now,
            "messages": int(current.get("messages") or 0) + data.count(b"\n"),
        }
        first = next((m.text for m in messages if m.role == "user" and m.text.strip()), "")
        if not current.get("title") and strip_handoff(first).strip():
            update["title"] = _title(strip_handoff(first))
        self.put(update)

    def worktree(self, provider: str, session_id: str, path: str) -> None:
        """The session runs in the avatar git worktree at `path` (`--worktree`): it is
        listed with it and resumed in it."""
        if self.all().get((provider, session_id), {}).get("worktree") != path:  # (once)
            self.put({"provider": provider, "id": session_id, "worktree": path})

    def forget(self, provider: str, session_id: str, *, keep_copy: bool = False) -> None:
        """Remove a session's record and (unless `keep_copy`) its copy of the turns."""
        self.put({"provider": provider, "id": session_id, "deleted": True})
        if not keep_copy:
            self.turns_path(provider, session_id).unlink(missing_ok=True)


def _copy_line(message: TranscriptMessage, now: str) -> dict[str, Any]:
    """One message of avatar's copy of the turns, as `SessionRecords.turn` writes them."""
    line: dict[str, Any] = {"role": message.role, "text": message.text}
    if message.role == "assistant":
        line["tools"] = [c.name for c in message.tool_calls]
    stamp = message.timestamp
    return line | {"time": stamp.isoformat() if stamp else now}


class RecordStore(SessionStore):
    """A provider's sessions as avatar recorded them (for agents without a readable store).

    An archive of one carries only avatar's records (packed by the archive itself): none of
    the agent's own files, which avatar cannot read."""

    kind = "records"

    def __init__(self, provider: str, env: Mapping[str, str], avatar_home: Path) -> None:
        super().__init__(provider, env, avatar_home)
        self.records = SessionRecords(avatar_home)  # re-read only when the file changed

    def list(self, cwd: Path | None) -> list[SessionInfo]:
        """Recorded sessions of this provider started in `cwd` (all when None)."""
        found = self.records.sessions(self.provider)
        if cwd is None:
            return found
        here = str(cwd)
        return [s for s in found if s.cwd == here]

    def transcript(self, session_id: str) -> Transcript:
        """The turns avatar carried in the session."""
        for info in self.find(session_id):
            if info.id == session_id:
                return self.records.transcript(info)
        raise SessionNotFoundError(f"no {self.provider} session {session_id!r}")

    def read_transcript(self, info: SessionInfo) -> Transcript:
        """The turns avatar carried in a session it listed (as listed: named, say)."""
        return self.records.transcript(info)

    def archive_files(self, info: SessionInfo) -> builtins.list[tuple[str, Path]]:
        """Nothing of the agent's own."""
        return []

    def restore(
        self, session_id: str, files: Mapping[str, bytes], old_cwd: str | None, new_cwd: str
    ) -> FileWrites:
        """Nothing to place: an archive of this kind holds no file of the agent's."""
        check_names(files, self.kind, session_id, lambda name: False)
        return []
