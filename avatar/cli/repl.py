"""The REPL: prompt-toolkit input with history and a status line; slash commands; steering.

A turn runs as a task while the prompt stays live: text typed meanwhile steers the turn
(native) or is queued for the next turn (others); Ctrl-C interrupts the turn, not the REPL.
Without a terminal on stdin, lines are read one by one (handy for scripts and tests).
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.cli import settled
from avatar.cli.render import LineRenderer
from avatar.cli.slash import lookup, names
from avatar.errors import AvatarError
from avatar.events import BaseEvent, PermissionRequested, SessionStarted, Usage

if TYPE_CHECKING:
    from avatar.cli.commands import AppState
    from avatar.engine import Engine
    from avatar.permissions import Answer

_ANSWERS: dict[str, Answer] = {"y": "allow", "yes": "allow", "a": "always", "always": "always"}


class Repl:
    """State of one interactive run; talks to the engine's public API only."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.engine.set_permission_handler(self._ask_permission)
        self.renderer = LineRenderer(json_out=False, err=sys.stdout)
        self.engine.subscribe(self._on_event)
        self.usage = Usage()
        self.turn: asyncio.Task[None] | None = None
        self.queued: deque[str] = deque()
        self.permission_answer: asyncio.Future[Answer] | None = None

    # ----- events ---------------------------------------------------------------------

    def _on_event(self, event: BaseEvent) -> None:
        if isinstance(event, SessionStarted):
            self.usage = Usage()
        if isinstance(event, Usage) and not event.replay:
            self.usage = event
        self.renderer.on_event(event)

    def say(self, text: str) -> None:
        """Print a line for the user."""
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    async def _ask_permission(self, request: PermissionRequested) -> Answer:
        loop = asyncio.get_running_loop()
        self.permission_answer = loop.create_future()
        self.say(f"permission: allow {request.title!r}? [y/N] (a: always for this session)")
        try:
            return await self.permission_answer
        finally:
            self.permission_answer = None

    def toolbar(self) -> str:
        """The status line: provider, model, session id, context use, tokens/cost."""
        status = self.engine.status()
        parts = [
            status.provider or "-",
            status.model or "default model",
            status.session_id or "no session",
        ]
        pct = self.usage.context_percent
        if pct is not None:
            parts.append(f"ctx {pct:.0f}%")
        tokens = (self.usage.input_tokens or 0) + (self.usage.output_tokens or 0)
        if tokens:
            parts.append(f"{tokens} tok")
        if self.usage.cost_usd:
            parts.append(f"${self.usage.cost_usd:.4f}")
        return " · ".join(parts)

    # ----- turns ----------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a turn runs."""
        return self.turn is not None and not self.turn.done()

    async def run_turn(self, prompt: str) -> None:
        """One turn, then any prompts queued while it ran."""
        while True:
            try:
                async for event in self.engine.send(prompt):
                    self._on_event(event)
            except AvatarError as e:
                self.say(f"avatar: {e}")
            if not self.queued:
                return
            prompt = self.queued.popleft()

    async def submit(self, text: str) -> None:
        """Start a turn, or steer/queue when one is running."""
        if self.engine.session is None:
            await self.engine.new()
        if self.busy:
            if await self.engine.steer(text):
                self.say("(steering the running turn)")
            else:
                self.queued.append(text)
                self.say("(queued for after this turn)")
            return
        self.turn = asyncio.create_task(self.run_turn(text))

    async def wait_turn(self) -> None:
        """Wait for the running turn (used when input is not a terminal)."""
        if self.turn is not None:
            await self.turn

    async def interrupt(self) -> None:
        """Ctrl-C: stop the running turn."""
        if self.busy:
            self.queued.clear()
            await self.engine.cancel()
            self.say("(interrupted)")

    # ----- commands -------------------------------------------------------------------

    async def command(self, line: str) -> bool:
        """Run a slash command; True means leave."""
        try:
            words = shlex.split(line)
        except ValueError as e:
            self.say(f"avatar: {e}")
            return False
        cmd = lookup(words[0])
        if cmd is None:
            self.say(f"avatar: unknown command {words[0]} (/help lists them)")
            return False
        if self.busy and not cmd.while_busy:
            self.say("avatar: wait for the running turn to finish (Ctrl-C interrupts it)")
            return False
        try:
            return await cmd.handler(self, words[1:])
        except AvatarError as e:
            self.say(f"avatar: {e}")
            return False

    # ----- input loops ----------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Dispatch one input line; True means leave."""
        text = line.strip()
        if self.permission_answer is not None and not self.permission_answer.done():
            self.permission_answer.set_result(_ANSWERS.get(text.lower(), "deny"))
            return False
        if not text:
            return False
        if text.startswith("/"):
            return await self.command(text)
        await self.submit(text)
        return False

    async def run_tty(self) -> None:
        """Interactive loop on a terminal."""
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.patch_stdout import patch_stdout

        history = self.engine.home / "history"
        history.parent.mkdir(parents=True, exist_ok=True)
        prompt: PromptSession[str] = PromptSession(
            history=FileHistory(str(history)),
            completer=WordCompleter(names(), sentence=True),
        )
        with patch_stdout(raw=True):
            while True:
                try:
                    line = await prompt.prompt_async("› ", bottom_toolbar=self.toolbar)
                except KeyboardInterrupt:
                    await self.interrupt()
                    continue
                except EOFError:
                    break
                if await self.handle(line):
                    break

    async def run_lines(self) -> None:
        """Loop over stdin lines when stdin is not a terminal; each turn finishes first."""
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            if await self.handle(line):
                break
            await self.wait_turn()


def run_repl(
    state: AppState,
    *,
    resume: str | None,
    cont: bool,
    source: str | None,
    permission: str | None = None,
    add_dirs: Sequence[Path] = (),
) -> int:
    """Start the REPL (optionally resuming, continuing, or seeded from another session)."""
    # Built before the loop: an unknown provider or preset is a usage error, not a REPL.
    engine = state.engine(permission=permission, add_dirs=add_dirs)
    return asyncio.run(_main(engine, resume, cont, source))


async def _main(engine: Engine, resume: str | None, cont: bool, source: str | None) -> int:
    repl = Repl(engine)
    try:
        if resume or cont or source:
            await engine.open(resume=resume, continue_last=cont, source=source)
        settled()
        if sys.stdin.isatty():
            repl.say("avatar REPL — /help for commands, Ctrl-D to leave")
            await repl.run_tty()
        else:
            await repl.run_lines()
        if repl.busy:
            await engine.cancel()
            assert repl.turn is not None
            await repl.turn
    finally:
        await engine.close()
    return 0
