"""The lines that fence handed-over context inside a prompt, and how to take them out again.

A seeded prompt is the user's own words, then the handoff between these fences. Anything that
reads a user message back (titles, the next handoff) cuts the fenced part off, so handoff text
never becomes a title and a handoff of a handed-over session never nests. Kept free of heavy
imports: the session readers use it while listing.
"""

from __future__ import annotations

START = "=== context handed over by avatar"
END = "=== end of handed-over context ==="


def split_seeded(text: str) -> tuple[str, list[str]]:
    """`(the user's own words, the handed-over blocks)` of one user message."""
    own, blocks = [], []
    while (at := text.find(START)) >= 0:
        end = text.find(END, at)
        stop = end + len(END) if end >= 0 else len(text)
        own.append(text[:at])
        blocks.append(text[at:stop])
        text = text[stop:]
    own.append(text)
    return "".join(own).strip(), blocks


def strip_handoff(text: str) -> str:
    """`text` without any handed-over block (the user's own words)."""
    return split_seeded(text)[0] if START in text else text
