"""The REPL's input line: history (persistent, Ctrl-R; secrets masked in its file),
completion, multi-line input (a pasted block stays one message), the REPL's keys
(`avatar.cli.repl.keys`: single-key permission answers, Esc, `?`, Ctrl-T, Ctrl-O), the live
tail of the answer's block in progress above the input line, and the status line (redrawn
several times a second while a turn or command runs, so the spinner moves and the tail grows;
still when idle). All three draw an emoji in the cells a terminal gives it
(`avatar.cli.repl.glyphs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import AnyFormattedText, FormattedText, StyleAndTextTuples
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import merge_key_bindings

from avatar.cli.repl import menu
from avatar.cli.repl.complete import ReplCompleter
from avatar.cli.repl.glyphs import Glyphs, glyph_keys, install, to_glyphs
from avatar.cli.repl.keys import key_bindings, tune

if TYPE_CHECKING:
    from collections.abc import Callable

    from avatar.cli.repl.host import ReplHost


class MaskedHistory(FileHistory):
    """Input history whose file holds no secret (`mask` masks each entry written); this run's
    own entries stay as typed in memory, for the up arrow."""

    def __init__(self, filename: str, mask: Callable[[str], str]) -> None:
        super().__init__(filename)
        self.mask = mask

    def store_string(self, string: str) -> None:
        """Append one entry to the file, masked."""
        super().store_string(self.mask(string))


def make_prompt(repl: ReplHost) -> PromptSession[str]:
    """The prompt session of `repl`."""
    history = repl.engine.home / "history"
    history.parent.mkdir(parents=True, exist_ok=True)
    install()  # (the screen draws a stand-in as its glyph: `avatar.cli.repl.glyphs`)
    session: PromptSession[str] = PromptSession(
        message=lambda: _with_live_tail(repl, _prompt_text(repl)),
        history=MaskedHistory(str(history), lambda text: _recorded(repl, text)),
        completer=ReplCompleter(repl.engine, lambda: repl.engine.sessions(), repl.agent_commands),
        complete_while_typing=False,
        key_bindings=merge_key_bindings([key_bindings(repl), glyph_keys()]),
        bottom_toolbar=lambda: to_glyphs([("", repl.toolbar())]),
        input_processors=[Glyphs()],  # emoji in the cells a terminal gives them
        refresh_interval=0,  # none: redrawn by `reading.keep_moving` while busy, never when idle
        enable_history_search=False,  # Ctrl-R searches; up-arrow walks history
        # The prompt as drawn (the live tail of the answer above it included) is not left in
        # the scrollback when a line is sent or Ctrl-C pressed: the tail would stay there as
        # a copy of the answer, and `›` lines with it. The REPL prints the line sent itself.
        erase_when_done=True,
    )
    tune(session.app)
    return session


def _prompt_text(repl: ReplHost) -> str:
    """What the input line starts with: the question waiting for an answer, if any."""
    if repl.asking.pending is not None:
        return menu.PROMPT
    return repl.shell.question or "› "


def _recorded(repl: ReplHost, text: str) -> str:
    """A line as its history file keeps it: folded pastes in full, secrets masked."""
    return repl.engine.registry.secrets().mask(repl.pastes.expand(text))


def _with_live_tail(repl: ReplHost, prompt: str) -> AnyFormattedText:
    """The prompt, under the block of the answer that is streaming in and not drawn yet."""
    from prompt_toolkit.application.current import get_app

    tail = repl.screen.live_tail(get_app().output.get_size().columns - 1)
    shown: StyleAndTextTuples = [("", prompt)]
    if tail:
        shown.insert(0, ("fg:ansibrightblack", tail + "\n"))
    return FormattedText(to_glyphs(shown))
