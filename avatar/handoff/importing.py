"""`--import`: another provider's conversation written into the target's own session format,
so the target's own resume opens it with the earlier turns as real messages (docs/design.md §3).

What is said here is not format: the conversation flattened to alternating user and assistant
text (tool calls and their results become text, since the formats differ; secrets masked;
the turns of a handed-over block written as the turns they were, so an import after a handoff
holds the earlier legs too). Writing it, and reading it back to check it, is the target
store's own `write_import` (native, Claude Code's transcripts, Codex's rollouts); a store that
cannot take one says so, and the conversation is handed over instead."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from avatar.handoff.legs import TURNS_HEADING, Turn, block_source, block_turns
from avatar.sessions.handoff_marker import END, split_seeded
from avatar.sessions.types import TranscriptMessage

if TYPE_CHECKING:
    from avatar.policy.secrets import SecretDetector
    from avatar.sessions.store import SessionStore
    from avatar.sessions.types import SessionInfo, Transcript

_TOOL_OUTPUT = 500


def carried(transcript: Transcript, secrets: SecretDetector) -> list[Turn]:
    """The conversation as the turns an import writes, each with the session it was said in
    (a handed-over block's turns with theirs, the rest with `transcript`'s own); secrets
    masked before anything is cut."""
    info = transcript.info
    own_leg = (info.provider, info.id)
    out: list[Turn] = []
    for msg in transcript.masked(secrets).messages:
        if msg.role == "user":
            own, blocks = split_seeded(msg.text)
            for block in blocks:  # what was said before, in the earlier legs of the chain
                earlier = block_turns(block)
                if earlier.left_out or not earlier.turns:  # what is known of the rest
                    summary = block.partition("\n" + TURNS_HEADING)[0] + "\n\n" + END
                    out.append(Turn("USER: " + summary, block_source(block)))
                out.extend(earlier.turns)
            out.append(Turn("USER: " + own, own_leg))
        elif msg.role == "assistant":
            lines = [msg.text] + [f"[tool call {c.name}] {c.input or ''}" for c in msg.tool_calls]
            out.append(Turn("ASSISTANT: " + "\n".join(lines), own_leg))
        elif msg.role == "tool":
            out_text = msg.text if len(msg.text) <= _TOOL_OUTPUT else msg.text[:_TOOL_OUTPUT] + " …"
            label = "[tool result (error)]" if msg.is_error else "[tool result]"
            out.append(Turn(f"{label} {out_text}", own_leg))
    return [t for t in out if t.text.strip()]


def flattened(transcript: Transcript, secrets: SecretDetector) -> Transcript:
    """The conversation as alternating user and assistant messages of plain text (`carried`:
    tool calls and their results as text, a handed-over block as the turns it carried)."""
    out: list[TranscriptMessage] = []
    for turn in carried(transcript, secrets):
        role: Literal["user", "assistant"] = "user" if turn.role == "user" else "assistant"
        text = turn.text.strip()
        if out and out[-1].role == role:  # both APIs want the roles to alternate
            out[-1].text += "\n\n" + text
        else:
            out.append(TranscriptMessage(role=role, text=text))
    return replace(transcript, messages=out)


def write_import(
    store: SessionStore,
    transcript: Transcript,
    cwd: Path,
    model: str | None,
    secrets: SecretDetector,
) -> SessionInfo:
    """Write `transcript` into `store` as a new session of project `cwd` (on `model`, where
    the store records one); the new session as listed. `NotSupportedError` when the store
    cannot take an import; `ImportCheckError` when it did not read back whole."""
    return store.write_import(flattened(transcript, secrets), cwd, model)
