"""How the REPL reads what the user types: on a terminal, prompt-toolkit's input line (redrawn
while work runs, Ctrl-C interrupting the turn, Ctrl-D leaving after a confirmation when a turn
runs); without one, stdin line by line, each turn finished before the next line (scripts)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO, cast

from avatar.cli.repl import menu

if TYPE_CHECKING:
    from prompt_toolkit.application import Application

    from avatar.cli.repl.repl import Repl

TICK = 0.25  # seconds between redraws while busy
#: Seconds prompt-toolkit's stdout proxy waits after a write above the prompt before the next
#: (its own default, 0.2 s, held an interrupt's `(interrupted)` that long behind the block
#: printed just before it, and a finished block off the screen between the live tail and its
#: place above the prompt). Writes in that gap still go together, as one repaint.
WRITE_GAP = 0.02


@contextlib.contextmanager
def printing_above_prompt() -> Iterator[None]:
    """`sys.stdout` and `sys.stderr` write above the running prompt (prompt-toolkit's
    `patch_stdout`, raw, with `WRITE_GAP` between repaints)."""
    from prompt_toolkit.patch_stdout import StdoutProxy

    with StdoutProxy(sleep_between_writes=WRITE_GAP, raw=True) as proxy:
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = cast(TextIO, proxy)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved


async def read_terminal(repl: Repl) -> None:
    """The interactive loop on a terminal, until the user leaves."""
    from avatar.cli.repl.prompt import make_prompt
    from avatar.cli.repl.prompting import prompt_line

    prompt = make_prompt(repl)

    def put_back(text: str) -> bool:
        buffer = prompt.default_buffer
        if buffer.text:
            return False
        buffer.insert_text(text)
        prompt.app.invalidate()
        return True

    repl.put_back = put_back

    back: list[str] = []  # lines put back while no prompt ran (after Ctrl-C), for the next

    def refill(lines: list[str]) -> None:
        """Queued lines an interrupt stopped, back in the box before what is typed there."""
        buffer = prompt.default_buffer
        if not prompt.app.is_running:
            back.extend(lines)
            return
        buffer.text = "\n".join([*lines, buffer.text] if buffer.text else lines)
        buffer.cursor_position = len(buffer.text)
        prompt.app.invalidate()

    repl.refill = refill
    ticker = asyncio.create_task(keep_moving(repl, prompt.app))
    leaving = 0.0  # when Ctrl-D was pressed mid-turn (a second one soon after leaves)
    try:
        with repl.notifier.reporting(), printing_above_prompt():
            while True:
                default, back[:] = "\n".join(back), []
                try:
                    line = await prompt_line(prompt, default=default)
                except KeyboardInterrupt:
                    await repl.interrupt()
                    continue
                except EOFError:
                    if not repl.busy or time.monotonic() - leaving < menu.FINISH:
                        break
                    leaving = time.monotonic()
                    repl.say("a turn is running: Ctrl-D again to stop it and leave", "yellow")
                    continue
                # The prompt is erased once sent (`make_prompt`): the line is shown here, once.
                # A line typed while busy is shown by what is done with it (queued, steering),
                # an answer to the menu by the menu.
                if line.strip() and not repl.busy and repl.asking.pending is None:
                    repl.screen.user_line(line.strip())
                if await repl.handle(line):
                    break
    finally:
        repl.refill = None
        ticker.cancel()


async def keep_moving(repl: Repl, app: Application[str]) -> None:
    """Redraw `app`'s input line and status line while busy (the spinner, the live tail, the
    clock), a few times a second, and once more when the work ends (the status line says idle
    even when nothing was printed last); an idle screen is left alone. Another client's turn
    streaming in (`avatar attach`) moves it too."""
    moving, ended = False, repl.ended
    while True:
        await asyncio.sleep(TICK)
        busy = repl.busy or repl.asking.pending is not None or bool(repl.screen.pending)
        busy = busy or repl.engine.turn_elsewhere  # (another client's turn: its status too)
        # (Work that began and ended between two ticks was drawn busy as its line was sent.)
        if app.is_running and (busy or moving or repl.ended != ended):
            app.invalidate()
        moving, ended = busy, repl.ended


async def read_lines(repl: Repl) -> None:
    """Stdin line by line when it is not a terminal; each turn finishes first."""
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        if await repl.handle(line):
            break
        await repl.wait()
