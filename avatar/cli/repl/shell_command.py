"""`!command` in the REPL: a shell command of the user's own, run in the project inside the
commands' walls (`Engine.shell`), its output shown as it comes; then one question, answered
with `y` or `n` alone: add the output to the next prompt? (`y`: it goes with the next prompt
as one of avatar's notes, which the agent reads and a recap leaves out.) Anything else typed
instead is a prompt, and the output stays out. Ctrl-C stops the command and all it started.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from avatar.cli.repl.screen import Screen
    from avatar.cli.repl.transcript_view import TranscriptLog
    from avatar.engine.engine import Engine

_KEPT = 256 * 1024  # the output of a stopped command kept for the transcript
QUESTION = "add this output to your next prompt? [y/n] › "


class _Host(Protocol):
    engine: Engine
    screen: Screen

    def say(self, text: str, style: str | None = None) -> None:
        """Print a line of avatar's own."""


class _Ran(Protocol):
    """What `Engine.shell` returns (`avatar.engine.shell.ShellResult`)."""

    @property
    def command(self) -> str:
        """The command line."""

    @property
    def output(self) -> str:
        """Its output."""

    @property
    def exit_code(self) -> int | None:
        """Its status (None: stopped)."""

    @property
    def walled(self) -> bool:
        """Whether it ran inside the walls."""

    @property
    def context(self) -> str:
        """The note that puts the output into a prompt."""


class ShellCommands:
    """The `!command`s of one REPL, and the outputs kept for its next prompt."""

    def __init__(self, repl: _Host, log: TranscriptLog) -> None:
        self.repl = repl
        self.log = log  # what ran goes into the transcript (Ctrl-O)
        self.offered: _Ran | None = None  #: the output the question is about
        self.kept: list[_Ran] = []  #: outputs the next prompt takes
        self._task: asyncio.Task[_Ran] | None = None

    @property
    def question(self) -> str | None:
        """The prompt's text while the question waits for its answer."""
        return QUESTION if self.offered is not None else None

    async def run(self, command: str) -> bool:
        """Run `command` (the line after `!`) and offer its output; False (a slash
        command's "stay")."""
        self.offered = None
        if not command:
            self.repl.say("usage: !COMMAND (runs it in the project, inside the walls)")
            return False
        repl, tail = self.repl, _Lines(self.repl.screen)
        repl.say(f"$ {command}", "bold")
        self._task = asyncio.ensure_future(repl.engine.shell(command, tail.feed))
        try:
            ran = await self._task
        except asyncio.CancelledError:
            tail.flush()
            repl.say("(stopped)", "dim")
            self.log.shell(command, tail.text, "stopped")
            return False
        finally:
            self._task = None
        tail.flush()
        walls = "" if ran.walled else " · not inside walls (none here, or sandbox: off)"
        repl.say(f"─ exit {ran.exit_code}{walls}", "dim" if ran.exit_code == 0 else "yellow")
        self.log.shell(command, ran.output, f"exit {ran.exit_code}")
        self.offered = ran  # (the prompt asks: `QUESTION`)
        return False

    def stop(self) -> bool:
        """Ctrl-C or Esc: stop the running command; False when none runs."""
        if self._task is None or self._task.done():
            return False
        self._task.cancel()
        return True

    def answer(self, yes: bool) -> None:
        """The question's answer."""
        ran, self.offered = self.offered, None
        if ran is None:
            return
        if yes:
            self.kept.append(ran)
            self.repl.say("(its output goes with your next prompt)", "dim")
        else:
            self.repl.say("(not added)", "dim")

    def withdraw(self) -> None:
        """Something else was typed: the question is no longer asked (nothing added)."""
        self.offered = None

    def opening(self, prompt: str) -> str:
        """`prompt` after the outputs kept for it (then forgotten)."""
        kept, self.kept = self.kept, []
        return "".join(ran.context for ran in kept) + ("\n" if kept else "") + prompt


class _Lines:
    """A command's output to the screen line by line as it comes (a last line without its
    newline once the command ends)."""

    def __init__(self, screen: Screen) -> None:
        self.screen = screen
        self._partial = ""
        self.text = ""

    def feed(self, chunk: str) -> None:
        self.text = (self.text + chunk)[-_KEPT:]
        *done, self._partial = (self._partial + chunk).split("\n")
        for line in done:
            self.screen.line(line)

    def flush(self) -> None:
        if self._partial:
            line, self._partial = self._partial, ""
            self.screen.line(line)
