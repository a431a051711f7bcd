"""`--import`: another provider's conversation written into the target's own session format,
read back through avatar's reader to check it, so the target's own resume opens it with the
earlier turns as real messages (DESIGN §3). Tool calls become text, since the formats differ.
Targets: native, Claude Code's transcript JSONL (claude, claude-acp) and Codex's rollout JSONL
(the pinned codex-acp loads a rollout of a `session_meta` line and `message` items). Other kinds
(not in `IMPORTABLE`) are handed over instead."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError
from avatar.handoff.marker import strip_handoff

if TYPE_CHECKING:
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.store import SessionStore
    from avatar.sessions.types import Transcript

_TOOL_OUTPUT = 500


#: The store kinds (`avatar.sessions.archive_stores.kind_of`) a conversation can be written into.
IMPORTABLE = ("native", "claude", "codex")


def turns(transcript: Transcript, secrets: SecretDetector) -> list[tuple[str, str]]:
    """`(role, text)` of the conversation, alternating user/assistant, tool calls and their
    results as text, handed-over blocks left out (the messages themselves are here); secrets
    masked before anything is cut."""
    out: list[tuple[str, str]] = []

    def put(role: str, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if out and out[-1][0] == role:  # both APIs want the roles to alternate
            out[-1] = (role, out[-1][1] + "\n\n" + text)
        else:
            out.append((role, text))

    for msg in transcript.masked(secrets).messages:
        if msg.role == "user":
            put("user", strip_handoff(msg.text))
        elif msg.role == "assistant":
            lines = [msg.text] + [f"[tool call {c.name}] {c.input or ''}" for c in msg.tool_calls]
            put("assistant", "\n".join(lines))
        elif msg.role == "tool":
            out_text = msg.text if len(msg.text) <= _TOOL_OUTPUT else msg.text[:_TOOL_OUTPUT] + " …"
            label = "[tool result (error)]" if msg.is_error else "[tool result]"
            put("assistant", f"{label} {out_text}")
    return out


class ImportCheckError(AvatarError):
    """What was written does not read back as the conversation."""


def import_native(
    transcript: Transcript,
    avatar_home: Path,
    cwd: Path,
    env: Mapping[str, str],
    model: str | None,
    secrets: SecretDetector,
) -> str:
    """Write the conversation as a new native session; its id (checked by reading it back)."""
    from avatar.native.store.entries import MessageEntry
    from avatar.native.store.manager import SessionManager
    from avatar.sessions.native import NativeStore

    wanted = turns(transcript, secrets)
    manager = SessionManager(avatar_home)
    header, writer = manager.create(cwd, model=model)
    try:
        for role, text in wanted:
            writer.add(MessageEntry(role=role, text=text))  # type: ignore[arg-type]
    finally:
        writer.close()
    back = NativeStore("native", env, avatar_home).transcript(header.id)
    got = [(m.role, m.text) for m in back.messages]
    if got != wanted:
        manager.delete(header.id)
        raise ImportCheckError(f"the imported native session {header.id} did not read back whole")
    return header.id


def import_claude(
    transcript: Transcript, store: SessionStore, cwd: Path, secrets: SecretDetector
) -> str:
    """Write the conversation as a new Claude Code transcript (`store` is the ClaudeStore
    where `claude --resume` looks); its id, checked by reading it back."""
    import json
    import uuid
    from datetime import UTC, datetime

    from avatar.core.fileio import atomic_write

    wanted = turns(transcript, secrets)
    sid = str(uuid.uuid4())
    parent: str | None = None
    lines = []
    for i, (role, text) in enumerate(wanted):
        uid = str(uuid.uuid4())
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        content = [{"type": "text", "text": text}]
        message: dict[str, object] = {"role": role, "content": content}
        if role == "assistant":
            message |= {"id": f"msg_import_{i}", "type": "message", "model": "imported"}
            message |= {"stop_reason": "end_turn", "stop_sequence": None}
            message["usage"] = {"input_tokens": 0, "output_tokens": 0}
        entry = {
            "parentUuid": parent,
            "isSidechain": False,
            "type": role,
            "message": message,
            "uuid": uid,
            "timestamp": stamp,
            "userType": "external",
            "cwd": str(cwd),
            "sessionId": sid,
        }
        lines.append(json.dumps(entry, ensure_ascii=False))
        parent = uid
    path = store.project_dir(cwd) / f"{sid}.jsonl"  # type: ignore[attr-defined]
    atomic_write(path, ("\n".join(lines) + "\n").encode())
    got = [(m.role, m.text) for m in store.transcript(sid).messages]
    if got != wanted:
        path.unlink(missing_ok=True)
        raise ImportCheckError(f"the imported claude session {sid} did not read back whole")
    return sid


def import_codex(
    transcript: Transcript, store: SessionStore, cwd: Path, secrets: SecretDetector
) -> str:
    """Write the conversation as a new Codex rollout (`store` is the CodexStore, whose root
    is `$CODEX_HOME/sessions`, where codex-acp looks); its id, checked by reading it back."""
    import json
    import uuid
    from datetime import UTC, datetime

    from avatar.core.fileio import atomic_write

    wanted = turns(transcript, secrets)
    sid = str(uuid.uuid4())
    now = datetime.now(UTC)
    stamp = now.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    from avatar.core.version import __version__

    # codex reads no rollout whose metadata lacks `cli_version` or `source`.
    meta = {"id": sid, "timestamp": stamp, "cwd": str(cwd), "originator": "avatar-import"}
    meta |= {"cli_version": __version__, "source": "unknown"}
    lines = [{"timestamp": stamp, "type": "session_meta", "payload": meta}]
    for role, text in wanted:
        part = {"type": "input_text" if role == "user" else "output_text", "text": text}
        item = {"type": "message", "role": role, "content": [part]}
        lines.append({"timestamp": stamp, "type": "response_item", "payload": item})
    day = store.root() / now.strftime("%Y/%m/%d")  # type: ignore[attr-defined]
    path = day / f"rollout-{now.strftime('%Y-%m-%dT%H-%M-%S')}-{sid}.jsonl"
    atomic_write(path, "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode())
    got = [(m.role, m.text) for m in store.transcript(sid).messages]
    if got != wanted:
        path.unlink(missing_ok=True)
        raise ImportCheckError(f"the imported codex session {sid} did not read back whole")
    return sid
