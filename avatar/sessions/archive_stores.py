"""Per store: which files an archive carries, where they go back, and what is rewritten so the
provider running in the new project directory finds and resumes the session.

- claude: `projects/<slug of cwd>/<id>.jsonl` (+ the `<id>/` side directory); the project
  directory is named from the new cwd and every entry's `cwd` moves with it.
- codex: `sessions/YYYY/MM/DD/rollout-….jsonl` (same place under the new `CODEX_HOME`); the
  `cwd` of `session_meta` and `turn_context` (and the workspace roots) move.
- gemini: `tmp/<project>/chats/session-….jsonl`, in the new cwd's project (registered in
  `projects.json` when Gemini CLI has not seen it); `projectHash` is the new cwd's.
- native: `sessions/<slug of cwd>/<id>.jsonl`; the header's `cwd` moves, the index learns it.
- records: nothing of the provider's own (an ACP agent whose store avatar cannot read).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import UsageError

if TYPE_CHECKING:
    from avatar.sessions.store import SessionStore
    from avatar.sessions.types import SessionInfo

Writes = list[tuple[Path, bytes]]


def kind_of(store: SessionStore | None) -> str:
    """The name of the store kind (what an archive's files are)."""
    from avatar.sessions.claude import ClaudeStore
    from avatar.sessions.codex import CodexStore
    from avatar.sessions.gemini import GeminiStore
    from avatar.sessions.native import NativeStore

    kinds: dict[type, str] = {ClaudeStore: "claude", CodexStore: "codex", GeminiStore: "gemini"}
    kinds[NativeStore] = "native"
    for cls, name in kinds.items():
        if isinstance(store, cls):
            return name
    return "records"


def provider_files(kind: str, store: Any, info: SessionInfo) -> list[tuple[str, Path]]:
    """(name in the archive under `session/`, file) for every file of the session."""
    if kind == "records":
        return []
    if not info.path:
        raise UsageError(f"{info.provider} session {info.id} has no file to pack")
    path = Path(info.path)
    if kind == "codex":  # keep the date folders: codex finds rollouts by walking them
        return [(path.relative_to(store.root()).as_posix(), path)]
    files = [(path.name, path)]
    side = path.with_suffix("")  # Claude Code's `<id>/` (subagents, large tool results)
    if kind == "claude" and side.is_dir() and not side.is_symlink():
        for sub in sorted(side.rglob("*")):
            if sub.is_file() and not sub.is_symlink():
                files.append((sub.relative_to(path.parent).as_posix(), sub))
    return files


def place(
    kind: str, store: Any, sid: str, files: dict[str, bytes], old_cwd: str | None, new_cwd: str
) -> Writes:
    """Where each archived file goes for project `new_cwd`, its content rewritten; a usage
    error for a file the store would not have written for session `sid`."""
    for name in files:
        if not _expected(kind, sid, name):
            raise UsageError(f"the archive's session/{name} is not a file of {kind} session {sid}")
    if kind == "records":
        return []
    fix: Callable[[dict[str, Any]], bool]
    if kind == "claude":
        base = store.project_dir(new_cwd)
        fix = partial(_move_key, key="cwd", old=old_cwd, new=new_cwd)
    elif kind == "codex":
        base = store.root()
        fix = partial(_codex, old=old_cwd, new=new_cwd)
    elif kind == "gemini":
        base = store.chats_dir(new_cwd)
        digest = hashlib.sha256(new_cwd.encode()).hexdigest()
        fix = partial(_set_if_present, key="projectHash", value=digest)
    else:
        from avatar.native.store.index import SessionIndex

        base = SessionIndex(store.avatar_home).project_dir(Path(new_cwd))
        fix = partial(_native_header, old=old_cwd, new=new_cwd)
    return [
        (base / name, rewrite_lines(data, fix) if name.endswith(".jsonl") else data)
        for name, data in files.items()
    ]


def _expected(kind: str, sid: str, name: str) -> bool:
    """True for the names `provider_files` gives a session's files in this store kind."""
    if kind == "claude":
        return name == f"{sid}.jsonl" or name.startswith(f"{sid}/")
    if kind == "codex":
        return (
            re.fullmatch(rf"\d{{2,4}}/\d{{2}}/\d{{2}}/rollout-[\w.:-]*{sid}\.jsonl", name)
            is not None
        )
    if kind == "gemini":
        return re.fullmatch(rf"session-[\w.:-]*{sid[:8]}[\w-]*\.jsonl?", name) is not None
    return kind == "native" and name == f"{sid}.jsonl"


def after_restore(kind: str, store: Any, written: list[Path], new_cwd: str) -> None:
    """What a store needs once the files are in place (the native index)."""
    if kind == "native":
        from avatar.native.store.manager import SessionManager, scan_record

        manager = SessionManager(store.avatar_home)
        for path in written:
            if path.parent.parent == manager.root and (record := scan_record(path)):
                manager.update_index(path, record)


# -- rewriting -------------------------------------------------------------------------------


def rewrite_lines(data: bytes, fix: Callable[[dict[str, Any]], bool]) -> bytes:
    """Each JSON line through `fix` (True: it changed it); other lines stay byte for byte."""
    out = []
    for line in data.splitlines(keepends=True):
        try:
            entry = json.loads(line)
        except ValueError:
            out.append(line)
            continue
        if isinstance(entry, dict) and fix(entry):
            end = b"\n" if line.endswith(b"\n") else b""
            line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + end
        out.append(line)
    return b"".join(out)


def moved(value: Any, old: str | None, new: str) -> Any:
    """`value` under `new` if it is `old` or a path inside it; else unchanged."""
    if not isinstance(value, str) or not old:
        return value
    if value == old:
        return new
    if value.startswith(old.rstrip("/") + "/"):
        return new + value[len(old.rstrip("/")) :]
    return value


def _move_key(entry: dict[str, Any], key: str, old: str | None, new: str) -> bool:
    if key in entry and (value := moved(entry[key], old, new)) != entry[key]:
        entry[key] = value
        return True
    return False


def _set_if_present(entry: dict[str, Any], key: str, value: str) -> bool:
    if key in entry and entry[key] != value:
        entry[key] = value
        return True
    return False


def _native_header(entry: dict[str, Any], old: str | None, new: str) -> bool:
    return entry.get("type") == "session" and _move_key(entry, "cwd", old, new)


def _codex(entry: dict[str, Any], old: str | None, new: str) -> bool:
    payload = entry.get("payload")
    if entry.get("type") not in ("session_meta", "turn_context") or not isinstance(payload, dict):
        return False
    changed = _move_key(payload, "cwd", old, new)
    roots = payload.get("runtime_workspace_roots")
    if isinstance(roots, list):
        new_roots = [moved(r, old, new) for r in roots]
        changed |= new_roots != roots
        payload["runtime_workspace_roots"] = new_roots
    return changed
