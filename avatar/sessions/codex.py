"""Codex's own session store: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

`CODEX_HOME` defaults to `~/.codex`. A rollout is read line by line by
`avatar.sessions.codex_rollout`. Thread names given with `/rename` live in
`$CODEX_HOME/session_index.jsonl`.

A fork codex 0.166 makes (`session/fork`) is a rollout whose `session_meta` names its
parent's rollout and a byte offset in it (`history_base`): its history is the parent's up to
there, then its own lines. Such a fork is read (listed, shown, handed over) with that history,
and a rollout a fork reads from is not deleted under it (codex's own `thread/delete` refuses
too).

Besides reading: an imported conversation is written as a rollout of a `session_meta` line
and `message` items (what the pinned codex-acp loads), a name as a `thread_name` line, an
archived rollout goes back under the same date folders with its `cwd` moved, and a deleted
session takes its rollout (archived or not) and what codex keeps of it beside
(`avatar.sessions.codex_state`) with it.
"""

from __future__ import annotations

import builtins
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from avatar.core.errors import ProviderError, SessionNotFoundError, UsageError
from avatar.core.fileio import append_line, atomic_write
from avatar.core.ids import UUID_RE, new_uuid
from avatar.core.version import __version__
from avatar.sessions.codex_rollout import LIST_WANT, RolloutFold, fold_head, parse_for_listing
from avatar.sessions.codex_state import forget_thread, name_thread
from avatar.sessions.filestore import (
    JsonlSessionStore,
    Summary,
    candidate,
    fold_transcript,
    listdir,
    unsafe_id,
)
from avatar.sessions.jsonl import (
    LIST_LINE_CAP,
    parse_line,
    read_records,
    title_from,
)
from avatar.sessions.relocate import check_names, move_key, moved, packed_file, placed
from avatar.sessions.store import FileWrites
from avatar.sessions.types import SessionInfo, Transcript

_DATE_PART = re.compile(r"\d{2,4}")
#: A fork of a fork of …: how far back a fork's history is followed.
_FORK_DEPTH = 16


def codex_home(env: Any, home: Path) -> Path:
    """`$CODEX_HOME`, else `~/.codex`."""
    configured = env.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else home / ".codex"


class CodexStore(JsonlSessionStore):
    """Codex rollouts (written by codex-acp, `codex exec` and the codex TUI alike): read,
    imported into, named, deleted, archived and restored."""

    cache_name = "sessions-codex"
    kind = "codex"
    deletes = True

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

    def _archived(self) -> Path:
        """`$CODEX_HOME/archived_sessions`: rollouts codex archived (flat, no date folders)."""
        return codex_home(self.env, self.home()) / "archived_sessions"

    def _every_rollout(self) -> Iterator[str]:
        """Every rollout, listed or archived."""
        yield from self._walk(self.root(), depth=3)
        yield from self._walk(self._archived(), depth=0)

    def rollouts_of(self, session_id: str) -> builtins.list[str]:
        """The rollouts of session `session_id`, listed or archived (by their names)."""
        tail = f"-{session_id}.jsonl"
        return [p for p in self._every_rollout() if p.endswith(tail)]

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
        fold = RolloutFold(keep=False)
        stats = fold.read(path, LIST_LINE_CAP, want=LIST_WANT, parse=parse_for_listing)
        if not fold.meta_seen:
            return Summary(None, [f"{path}: no session_meta line, skipped"])
        bad = unsafe_id(path, fold.session_id)
        if bad is not None:
            return bad
        parent = self._history(fold.base, keep=False)
        if parent is not None:  # a fork: the messages it inherited are its own too
            fold.count += parent.count
            fold.first_user = parent.first_user or fold.first_user
            fold.model = fold.model or parent.model
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
        """Every message of the rollout, tool calls and their outputs included (a fork's
        inherited history first)."""
        fold = RolloutFold(keep=True)
        transcript = fold_transcript(info, fold)
        parent = self._history(fold.base, keep=True)
        if parent is not None:
            transcript.messages[:0] = parent.messages
        return transcript

    def _history(
        self, base: tuple[str, int] | None, keep: bool, depth: int = 0
    ) -> RolloutFold | None:
        """The history a fork inherited (`base`: its parent and the byte offset in the
        parent's rollout where it ends), its own inherited history first; None when the
        rollout is no fork, or its parent's rollout is gone."""
        if base is None or depth > _FORK_DEPTH:
            return None
        found = self.rollouts_of(base[0])
        if not found:
            return None
        fold = fold_head(found[0], base[1], keep)
        if fold is None:
            return None
        earlier = self._history(fold.base, keep, depth + 1)
        if earlier is not None:
            fold.count += earlier.count
            fold.first_user = earlier.first_user or fold.first_user
            fold.model = fold.model or earlier.model
            fold.messages[:0] = earlier.messages
        return fold

    def write_import(
        self, conversation: Transcript, cwd: Path, model: str | None = None
    ) -> SessionInfo:
        """A new rollout under today's date folder of `$CODEX_HOME/sessions`, where
        codex-acp looks."""

        sid = new_uuid()
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

    def delete(self, info: SessionInfo) -> None:
        """Delete session `info` as codex's own `thread/delete` does: its rollout (listed or
        archived) and its rows in codex's databases, and its name and shell snapshots
        (`forget_thread`). A session whose rollout holds the history of a fork is refused
        (`ProviderError` naming the forks): the fork would lose it."""
        if not UUID_RE.fullmatch(info.id):
            raise UsageError(f"invalid session id {info.id!r}")
        rollouts = self.rollouts_of(info.id)
        if not rollouts:
            raise SessionNotFoundError(f"no {self.provider} session {info.id!r}")
        forks = self.forks_of(info.id)
        if forks:
            raise ProviderError(
                f"{self.provider} session {info.id} holds the history of its "
                f"fork{'s' if len(forks) > 1 else ''} {', '.join(forks)}: delete "
                f"{'those' if len(forks) > 1 else 'it'} first (nothing was deleted)"
            )
        forget_thread(codex_home(self.env, self.home()), info.id)
        for path in rollouts:
            Path(path).unlink(missing_ok=True)
            self._cache.forget(path)
        self._cache.save()

    def forks_of(self, session_id: str) -> builtins.list[str]:
        """The ids of the rollouts (listed or archived) whose history is read from session
        `session_id`'s rollout (their `session_meta` names it in `history_base`)."""
        needle = re.compile(
            rb'"history_base"\s*:\s*\{\s*"thread_id"\s*:\s*"' + re.escape(session_id.encode())
        )
        found = []
        for path in self._every_rollout():
            try:
                with open(path, "rb") as f:
                    first = f.readline(LIST_LINE_CAP)
            except OSError:
                continue
            meta = parse_line(first) if needle.search(first) else None
            payload = meta.get("payload") if meta else None
            if isinstance(payload, dict) and isinstance(payload.get("id"), str):
                found.append(payload["id"])
        return found

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
