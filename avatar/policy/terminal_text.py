"""Text from models, agents and session files made inert before it reaches a terminal.

A model's answer, an agent's stderr, a title or a transcript read from a session file may hold
control characters that a terminal obeys: OSC sequences that change the window title or make
a link point elsewhere (OSC 8), CSI sequences that clear the screen or move the cursor, DCS,
APC and PM strings, C1 controls, a bell, or a backspace or carriage return that writes over
what a line said. `inert` shows each such character as visible text instead (`^[` for ESC,
`\\x9b` for a C1 control), so an escape sequence reads as the characters it is made of and
does nothing. Newlines and tabs stay; `\\r\\n` is a newline. A lone surrogate (no Unicode text)
shows as its escape, `\\ud800`. avatar's own styling is added after this, by rich, and is the
only escape code avatar prints.

Where the text is data rather than something shown (a pipe, a file, `--json`), it is passed
on as it is: `for_terminal` makes it inert only when the stream is a terminal.
"""

from __future__ import annotations

import re
from typing import TextIO

# C0 but tab and newline, DEL, C1, lone surrogates; `\r\n` first, so it is matched whole.
_CONTROL = re.compile("\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return "^" + chr(code ^ 0x40)  # caret notation: ESC `^[`, BEL `^G`, CR `^M`, DEL `^?`
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def inert(text: str) -> str:
    """`text` with every control character but newline and tab written out visibly."""
    if _CONTROL.search(text) is None:  # the common case: nothing to do, no copy
        return text
    return _CONTROL.sub(_visible, text)


def is_terminal(stream: TextIO) -> bool:
    """True when `stream` is a terminal (not a pipe, a file, or closed)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def for_terminal(text: str, stream: TextIO) -> str:
    """`text` as it should be written to `stream`: made inert for a terminal, as it is for a
    pipe or a file, where it is data."""
    return inert(text) if is_terminal(stream) else text
