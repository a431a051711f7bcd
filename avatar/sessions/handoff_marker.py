"""What avatar itself puts into a prompt around the user's words, and how to take it out again:
the lines that fence handed-over context, and avatar's notes (`note`): the words of a refusal
an ACP agent could not take with its answer (they go with the next prompt) and the output of
a `!command` the user chose to add.

A seeded prompt is the user's own words, then the handoff between these fences. Anything that
reads a user message back (titles, recaps, the next handoff) cuts the fenced part and the
notes off, so avatar's text never becomes a title or a user's turn, and a handoff of a
handed-over session never nests; the agent reads them all the same. Kept free of heavy
imports: the session readers use it while listing.
"""

from __future__ import annotations

import re

START = "=== context handed over by avatar"
END = "=== end of handed-over context ==="
#: The tags of avatar's notes in a prompt.
NOTES = ("avatar_refusal", "shell_output")
_NOTE = re.compile(r"<(avatar_refusal|shell_output)(?: [^>\n]*)?>.*?</\1>\n*", re.S)


def note(tag: str, body: str, **attributes: str) -> str:
    """One of avatar's notes (`tag`, one of `NOTES`), read by the agent with the prompt it
    opens and left out wherever the user's words are read back (`strip_handoff`)."""
    assert tag in NOTES
    said = "".join(f' {k}="{_attribute(v)}"' for k, v in attributes.items())
    inner = body.replace(f"</{tag}>", f"<\\/{tag}>")  # (the note ends where avatar says)
    return f"<{tag}{said}>\n{inner.rstrip()}\n</{tag}>\n"


def _attribute(value: str) -> str:
    return " ".join(value.split()).replace('"', "'").replace(">", "›")[:200]


def strip_notes(text: str) -> str:
    """`text` without avatar's notes."""
    return _NOTE.sub("", text).strip() if "</" in text else text


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
    return strip_notes("".join(own).strip()), blocks


def strip_handoff(text: str) -> str:
    """`text` without any handed-over block and avatar's notes (the user's own words)."""
    if START in text:
        return split_seeded(text)[0]
    return strip_notes(text)
