"""What of a session the search index holds: its searchable text, secrets masked."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from avatar.core.errors import AvatarError, SessionNotFoundError
from avatar.sessions.types import SessionInfo, Transcript

if TYPE_CHECKING:
    from avatar.library.catalog import Catalog

# Tool-call arguments that say what a call does (its title, as agents show it).
_TITLE_ARGS = ("description", "command", "file_path", "path", "pattern", "query", "url", "title")
_TITLE_ARG_CHARS = 200
#: Characters of one tool output indexed: a file read whole can be megabytes, and the
#: trigram index grows with every character.
TOOL_OUTPUT_CHARS = 100_000


def document(transcript: Transcript, redact: Callable[[str], str] = str) -> str:
    """The searchable text of a session: user and assistant messages, tool-call titles and
    tool output, each passed through `redact` (before anything is cut, so no secret is cut
    in two)."""
    parts: list[str] = []
    for m in transcript.messages:
        if m.role == "tool":
            # Cut twice: a bound on what is masked, then what masking left within the bound.
            output = redact(m.text[: 2 * TOOL_OUTPUT_CHARS].strip())[:TOOL_OUTPUT_CHARS]
            if output:
                parts.append(output)
            continue
        if m.role not in ("user", "assistant"):
            continue
        if m.text.strip():
            parts.append(redact(m.text.strip()))
        for call in m.tool_calls:
            args = call.input if isinstance(call.input, dict) else {}
            said = [redact(str(args[k]))[:_TITLE_ARG_CHARS] for k in _TITLE_ARGS if args.get(k)]
            parts.append(" ".join([call.name, *said]))
    return "\n".join(parts)


def read_document(catalog: Catalog, info: SessionInfo, redact: Callable[[str], str]) -> str:
    """The searchable text of listed session `info` ("" when it cannot be read now: it is
    still found by its title, and read again when it changes)."""
    store = catalog.store(info.provider)
    try:
        # Straight from the listed file: `transcript(id)` would look the id up in the store
        # again, once per session.
        if store is not None and info.path:
            with contextlib.suppress(SessionNotFoundError):  # then avatar's copy, if any
                return document(store.read_transcript(info), redact)
        return document(catalog.transcript(info), redact)
    except (AvatarError, OSError, ValueError):
        return ""
