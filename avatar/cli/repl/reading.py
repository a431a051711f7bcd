"""How the REPL reads what the user types: on a terminal, prompt-toolkit's input line (redrawn
while work runs, Ctrl-C interrupting the turn, Ctrl-D leaving after a confirmation when a turn
runs); without one, stdin line by line, each turn finished before the next line (scripts)."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import TYPE_CHECKING

from avatar.cli.repl import menu

if TYPE_CHECKING:
    from prompt_toolkit.application import Application

    from avatar.cli.repl.repl import Repl

TICK = 0.25  # seconds between redraws while busy


async def read_terminal(repl: Repl) -> None:
    """The interactive loop on a terminal, until the user leaves."""
    from prompt_toolkit.patch_stdout import patch_stdout

    from avatar.cli.repl.prompt import make_prompt

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
        with repl.notifier.reporting(), patch_stdout(raw=True):
            while True:
                default, back[:] = "\n".join(back), []
                try:
                    line = await prompt.prompt_async(default=default)
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
                if line.strip() and not repl.busy and repl.permission is None:
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
        busy = repl.busy or repl.permission is not None or bool(repl.screen.pending)
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
