"""The terminal rings when a long turn ends or a permission question waits while the person is
looking elsewhere (docs/design.md §11, the terminal's side of the web page's notifications).

Whether the terminal is in view is what it says itself: the REPL turns on focus reporting
(DEC mode 1004), and the terminal sends `ESC [ I` when it gains focus and `ESC [ O` when it
loses it. A terminal that never says is taken as in view: nothing rings (a bell nobody asked
for is noise). How it rings is the `notify` setting: `osc9` (a desktop notification in iTerm2,
WezTerm, Windows Terminal, ghostty, kitty), `osc777` (foot, rxvt, ghostty), `bell` (any
terminal; tmux marks the window), or `off`. A turn shorter than `notify_after` seconds does
not ring on its end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

#: What a terminal sends when it gains and loses focus, once reporting is on.
FOCUS_IN = "\x1b[I"
FOCUS_OUT = "\x1b[O"
#: Turn the terminal's focus reporting on and off.
REPORTING_ON = "\x1b[?1004h"
REPORTING_OFF = "\x1b[?1004l"

How = Literal["osc9", "osc777", "bell", "off"]


def sequence(how: How, text: str) -> str:
    """What to write for the notification `text` rung as `how` ("" for `off`); the text is
    made one plain line, without control characters, that cannot end the sequence early."""
    plain = "".join(c if c.isprintable() else " " for c in " ".join(text.split()))[:200]
    if how == "osc9":
        return f"\x1b]9;{plain}\x07"
    if how == "osc777":
        return f"\x1b]777;notify;avatar;{plain}\x07"
    return "\x07" if how == "bell" else ""


class Notifier:
    """Rings the terminal through `write` (None: not on a terminal, never rings) when the
    person is not looking: a turn of `after` seconds or more ended, or a question waits."""

    def __init__(self, how: How = "osc9", after: float = 10.0) -> None:
        self.how = how
        self.after = after
        self.write: Callable[[str], None] | None = None
        self.in_view = True  # until the terminal says otherwise

    def focus(self, in_view: bool) -> None:
        """The terminal said it gained (True) or lost (False) focus."""
        self.in_view = in_view

    def turn_ended(self, seconds: float) -> None:
        """A turn ended after `seconds`."""
        if seconds >= self.after:
            self._ring(f"avatar: the turn ended ({seconds:.0f}s)")

    def asking(self, title: str) -> None:
        """A permission question about `title` waits for an answer."""
        self._ring(f"avatar: permission asked: {title}")

    def _ring(self, text: str) -> None:
        if self.write is not None and not self.in_view and self.how != "off":
            self.write(sequence(self.how, text))
