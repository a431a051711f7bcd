"""The REPL's keys, as in the agents' own terminals: the permission menu's single keys, Esc to
interrupt a turn, Esc Esc on an empty prompt for `/rewind`, `?` for this list, Shift-Tab for
the permission mode, Ctrl-T for thinking in full; the daily tools' keys (Ctrl-G, Ctrl-O, Ctrl-V,
pastes) are `avatar.cli.repl.tool_keys`.

Ctrl-R (history search; Enter sends the line found, as in a shell), Ctrl-L (clear the screen),
Ctrl-C and Ctrl-D are prompt-toolkit's own (Ctrl-C and Ctrl-D reach the REPL as its
exceptions: `reading.read_terminal`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prompt_toolkit.filters import Condition, is_searching
from prompt_toolkit.key_binding import (
    KeyBindings,
    KeyBindingsBase,
    KeyPressEvent,
    merge_key_bindings,
)
from prompt_toolkit.keys import Keys

from avatar.cli.repl import menu

if TYPE_CHECKING:
    from prompt_toolkit.application import Application

    from avatar.cli.repl.host import ReplHost

#: How long a lone Esc waits for the rest of an escape sequence (seconds): as Neovim's
#: `ttimeoutlen`. Measured in `benchmarks/esc.py`.
ESCAPE_WAIT = 0.05

#: The `?` list; each line fits a 60-column terminal.
SHORTCUTS = """\
  y / a / n     answer a permission question (or type what
                to do instead, then Enter)
  Esc, Ctrl-C   interrupt the running turn; lines queued
                go back in the box (Ctrl-C on a line:
                clear it)
  Esc Esc       rewind: files and conversation back to
                before a turn (/rewind)
  Enter         send; while a turn or command runs, steer
                it or queue the line
  Alt-Enter     new line (Esc then Enter too, when idle)
  Ctrl-R        search prompt history;  ↑ / ↓  walk it
  Shift-Tab     permission mode: ask / accept edits / plan
  Ctrl-T        thinking in full / folded to one line
  Ctrl-O        the transcript in a pager: full tool
                output, thinking, a waiting handoff
  Ctrl-G        edit the prompt in $VISUAL / $EDITOR
                (pastes in full)
  Ctrl-V        attach the image on the clipboard
                (wl-paste, xclip or pngpaste)
  paste         over 10 lines shows as [pasted N lines],
                sent whole (Ctrl-G shows it; Backspace
                after it removes it); a dropped image
                file attaches the image
  !command      run a shell command inside the walls;
                then y / n: add its output to your next
                prompt
  Ctrl-L        clear the screen
  Ctrl-D        leave (asks first while a turn runs)
  /help         the commands;  @path attaches a file
                (@shot.png an image)"""


def key_bindings(repl: ReplHost) -> KeyBindingsBase:
    """The REPL's own keys (see the module docstring)."""
    bindings = KeyBindings()
    asking = Condition(lambda: repl.asking.pending is not None)
    empty = Condition(lambda: not _buffer_text())
    busy = Condition(lambda: repl.busy)

    # -- Esc ----------------------------------------------------------------------------
    # Esc is also the first key of Esc-Enter (and of Meta keys typed as Esc then a key), so
    # prompt-toolkit would wait a second for a second key before taking a lone Esc. During a
    # turn Esc alone interrupts at once (`eager`); Alt-Enter still makes a new line there,
    # since the terminal sends its two keys together. Bindings of Esc and another key go here.

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("escape", filter=busy & ~is_searching, eager=True)
    def _interrupt(event: KeyPressEvent) -> None:
        if _next_key_is_enter(event):  # Alt-Enter: its two keys arrived as one
            event.current_buffer.insert_text("\n")
            return
        repl.keep(asyncio.ensure_future(repl.interrupt()))

    @bindings.add("escape", "escape", filter=~busy & empty & ~asking)
    def _rewind(event: KeyPressEvent) -> None:
        # As typed: the line `/rewind` asks which turn (Esc is a prefix already, of Esc
        # Enter, so a lone Esc waits no longer than before).
        event.current_buffer.text = "/rewind"
        event.current_buffer.validate_and_handle()

    @bindings.add("enter", filter=is_searching)
    def _send_found(event: KeyPressEvent) -> None:
        # As in a shell: Enter on a line Ctrl-R found sends it.
        from prompt_toolkit.search import accept_search

        accept_search()
        event.app.current_buffer.validate_and_handle()

    @bindings.add("?", filter=empty & ~asking)
    def _shortcuts(event: KeyPressEvent) -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(lambda: repl.say(SHORTCUTS, "dim"))

    @bindings.add("s-tab")
    def _mode(event: KeyPressEvent) -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(repl.asking.cycle_mode)

    @bindings.add("c-t")
    def _thinking(event: KeyPressEvent) -> None:
        from prompt_toolkit.application import run_in_terminal

        full = repl.screen.full_thinking = not repl.screen.full_thinking
        run_in_terminal(lambda: repl.say(f"(thinking: {'in full' if full else 'one line'})"))

    for key in menu.KEYS:

        @bindings.add(key, filter=asking & empty)
        def _answer(event: KeyPressEvent, key: str = key) -> None:
            # Typed as text; it answers alone once nothing follows it for a moment.
            buffer = event.current_buffer
            buffer.insert_text(key)

            def settle() -> None:
                if buffer.text == key and repl.asking.pending is not None:
                    buffer.reset()
                    repl.asking.answer_key(key)
                    event.app.invalidate()

            asyncio.get_running_loop().call_later(menu.SETTLE, settle)

    from avatar.cli.repl.tool_keys import tool_bindings  # Ctrl-G, pastes, Ctrl-V, Ctrl-O, `!`

    return merge_key_bindings([bindings, tool_bindings(repl), repl.notifier.bindings()])


def tune(app: Application[str]) -> None:
    """The input's timing: a lone Esc is told from the start of a key's escape sequence
    after `ESCAPE_WAIT` seconds (prompt-toolkit waits half a second; a terminal sends a
    sequence's bytes together)."""
    app.ttimeoutlen = ESCAPE_WAIT


def _next_key_is_enter(event: KeyPressEvent) -> bool:
    """True (and the Enter taken) when the key typed with this one is Enter."""
    waiting = event.app.key_processor.input_queue
    if waiting and waiting[0].key == Keys.ControlM:
        waiting.popleft()
        return True
    return False


def _buffer_text() -> str:
    from prompt_toolkit.application.current import get_app

    return get_app().current_buffer.text
