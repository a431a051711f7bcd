"""Keys typed before the prompt is up (while avatar starts, opens or resumes a session) are
kept for it: the terminal stops echoing them onto the screen and holding them for a line,
so they wait unseen and the prompt, once it reads the terminal, finds them in its buffer."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def keys_held() -> Iterator[None]:
    """Hold typed keys unechoed until the prompt reads them; the terminal's settings as they
    were are put back on leaving (prompt-toolkit puts back the ones it found, these)."""
    try:
        import termios

        fd = sys.stdin.fileno()
        before = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):  # not a terminal: nothing to hold
        yield
        return
    quiet = list(before)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)  # lflags: no echo, no line holding
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(termios.error):  # (a terminal that went away: nothing to put back)
            termios.tcsetattr(fd, termios.TCSANOW, before)
