"""Notifications: when a turn ends or a permission question waits while the terminal is not
focused, the REPL rings — the terminal's bell, or a desktop notification through OSC 9
(iTerm2, WezTerm, Ghostty) or OSC 777 (foot, VTE terminals) — as Codex does. Config `notify`:
`auto` (the default: chosen from the terminal), `bell`, `osc9`, `osc777` or `off`.

Whether the terminal is focused comes from the terminal itself: the REPL asks for focus
reports (DEC mode 1004; the terminal then sends `CSI I` on focus and `CSI O` on leaving) and
takes them as keys. A terminal that sends none (tmux without `focus-events on`) counts as
focused: no ring while someone may be looking. Inside tmux `auto` rings the bell, which tmux
turns into its window alert (an OSC there would need tmux's passthrough).

The notification's words are avatar's own (the provider's name and what happened), never text
of the agent's: an OSC carries no escape sequence an agent wrote.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from prompt_toolkit.key_binding import KeyBindings

FOCUS_IN = "\x1b[I"
FOCUS_OUT = "\x1b[O"
REPORT_FOCUS, STOP_REPORTING = "\x1b[?1004h", "\x1b[?1004l"
#: Terminals whose desktop notification is OSC 9 / OSC 777, by `TERM_PROGRAM`.
OSC9_PROGRAMS = ("iTerm.app", "WezTerm", "ghostty")
CHANNELS = ("auto", "bell", "osc9", "osc777", "off")


def channel_for(setting: str, env: Mapping[str, str]) -> str:
    """The way to ring for config `notify: setting` in a terminal described by `env`."""
    if setting != "auto":
        return setting
    if env.get("TMUX"):
        return "bell"
    if env.get("TERM_PROGRAM") in OSC9_PROGRAMS:
        return "osc9"
    if env.get("VTE_VERSION") or env.get("TERM", "").startswith("foot"):
        return "osc777"
    return "bell"


def signal_for(channel: str, text: str) -> str:
    """What to write to the terminal to ring on `channel` saying `text` ("" for off)."""
    clean = "".join(c for c in text if c.isprintable() and c != ";")  # (avatar's own words)
    if channel == "osc9":
        return f"\x1b]9;{clean}\x07"
    if channel == "osc777":
        return f"\x1b]777;notify;avatar;{clean}\x07"
    return "\x07" if channel == "bell" else ""


class Notifier:
    """Rings when something waits for the user and the terminal is not focused."""

    def __init__(self, channel: str, write: Callable[[str], None] | None = None) -> None:
        self.channel = channel
        self.focused = True  # until the terminal says otherwise (one that reports nothing)
        self._write = write or _to_terminal

    @property
    def on(self) -> bool:
        """False when config says `notify: off`."""
        return self.channel != "off"

    def ring(self, text: str) -> None:
        """Say `text` (avatar's own words) by the channel, when nobody is looking."""
        if self.on and not self.focused:
            self._write(signal_for(self.channel, text))

    def bindings(self) -> KeyBindings:
        """The keys the terminal's focus reports arrive as (`listen`)."""
        from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
        from prompt_toolkit.keys import Keys

        bindings = KeyBindings()

        @bindings.add(Keys.F24)
        def _focus(event: KeyPressEvent) -> None:
            # A real F24 key (`CSI 24;2~`) changes nothing.
            if event.data in (FOCUS_IN, FOCUS_OUT):
                self.focused = event.data == FOCUS_IN

        return bindings

    @contextmanager
    def reporting(self) -> Iterator[None]:
        """While the prompt runs: the terminal reports focus changes (not when off)."""
        if not self.on:
            yield
            return
        listen()
        _to_terminal(REPORT_FOCUS)
        try:
            yield
        finally:
            _to_terminal(STOP_REPORTING)

    @contextmanager
    def handed_over(self) -> Iterator[None]:
        """While another program has the terminal (the editor, the pager): no focus reports,
        which it would read as keys; the user is back when it ends."""
        if not self.on:
            yield
            return
        _to_terminal(STOP_REPORTING)
        try:
            yield
        finally:
            self.focused = True
            _to_terminal(REPORT_FOCUS)


def listen() -> None:
    """Have prompt-toolkit read the focus reports as one key, F24 with the report as its data:
    unknown to it, `CSI O` would read as Esc, `[`, `O` — and Esc interrupts a turn."""
    from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
    from prompt_toolkit.keys import Keys

    ANSI_SEQUENCES[FOCUS_IN] = Keys.F24
    ANSI_SEQUENCES[FOCUS_OUT] = Keys.F24


def _to_terminal(text: str) -> None:
    # Straight to the terminal (not through prompt-toolkit's patched stdout): a bell or an OSC
    # moves no cursor, so the prompt's drawing is not disturbed.
    if text:
        os.write(sys.__stdout__.fileno() if sys.__stdout__ else 1, text.encode())
