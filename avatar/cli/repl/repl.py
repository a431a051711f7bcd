"""The REPL: prompt-toolkit input, rich output, slash commands, steering.

Turns and slow commands (opening a session, switching provider) run as tasks while the prompt
stays live: the status line shows a spinner with what is happening, text typed meanwhile
steers the turn (native) or is queued, shown as queued, and sent (or run, for a command) when
the work ends; Ctrl-C or Esc interrupts the turn, not the REPL, and says which queued lines it
dropped. How input is read (a terminal, or stdin line by line): `avatar.cli.repl.reading`.

While a server runs, the open session is listed with it (`host_on_server`): `avatar attach`
reaches it, and the prompts typed there queue here with the REPL's own, shown with who sent
them.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from avatar.cli.repl import menu
from avatar.cli.repl.asking import Asking
from avatar.cli.repl.mentions import read_mentions
from avatar.cli.repl.notify import Notifier, channel_for
from avatar.cli.repl.paste import Pastes
from avatar.cli.repl.screen import Screen
from avatar.cli.repl.shell_command import ShellCommands
from avatar.cli.repl.slash import lookup
from avatar.cli.repl.status_line import (
    ACTIVITY,
    HINT,
    MODEL,
    PROVIDER,
    SESSION,
    TAIL,
    Part,
    figures,
    fit,
)
from avatar.cli.repl.transcript_view import TranscriptLog, page, render
from avatar.core.errors import AvatarError
from avatar.core.events import (
    BaseEvent,
    CommandsAvailable,
    ModeChanged,
    SessionStarted,
    UserMessage,
)
from avatar.core.prompts import Prompt

if TYPE_CHECKING:
    from avatar.engine.engine import Engine
    from avatar.server.hosting import Hosting

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
QUIET = 0.3  # seconds without output before the spinner shows


class Repl:
    """State of one interactive run; talks to the engine's public API only."""

    def __init__(self, engine: Engine, screen: Screen | None = None) -> None:
        self.engine = engine
        self.screen = screen or Screen()
        # The turn's end line says the engine's count (what the status line and `ps` say).
        self.screen.turn_tokens = lambda: self.engine.status().numbers.turn_tokens
        self.engine.subscribe(self._on_event)
        self.work: asyncio.Task[None] | None = None  # the running turn or slow command
        self.turn_running = False
        #: How many turns and slow commands have ended (the screen redraws after each).
        self.ended = 0
        #: Lines typed while busy, and prompts other clients sent (with their name).
        self.queued: deque[tuple[str, str | None]] = deque()
        self._kept: set[asyncio.Future[Any]] = set()  # tasks keys started
        self._reopened = False  # a session was resumed: show where it was, once opened
        self._commands: dict[str, list[str]] = {}  # each provider's own slash commands
        self.hosting: Hosting | None = None  # the session as listed with the server
        #: Puts text back in an empty input line (True), set by the terminal's reader.
        self.put_back: Callable[[str], bool] | None = None
        #: Puts queued lines an interrupt stopped back into the input box (the terminal's
        #: prompt sets it; None without one).
        self.refill: Callable[[list[str]], None] | None = None
        # The daily tools: folded pastes, `!command`s, the transcript (Ctrl-O).
        self.pastes = Pastes()
        self.log = TranscriptLog()
        self.shell = ShellCommands(self, self.log)
        #: Rings when a turn ends or a permission waits and the terminal is not focused.
        self.notifier = Notifier(channel_for(engine.settings.notify, os.environ))
        #: The permission questions, and the mode (Shift-Tab).
        self.asking = Asking(engine, self.screen, self.notifier, self.say)
        self.engine.set_permission_handler(self.asking.ask)

    def host_on_server(self) -> None:
        """List the open session with the running server (now, or once one is open), so
        that `avatar ps` shows it and `avatar attach` reaches it (`avatar.server.hosting`)."""
        from avatar.server.hosting import hosting

        self.hosting = hosting(
            self.engine,
            take=self.take,
            interrupt=self.interrupt,
            tell=lambda text: self.say(f"({text})", "dim"),
            queued=lambda: len(self.queued),
        )
        if self.hosting is not None:
            self.engine.set_permission_handler(self.hosting.asking(self.asking.ask))
            self.hosting.register()

    async def close(self) -> None:
        """Leave: the session is no longer listed with the server, and the engine stops its
        agent."""
        if self.hosting is not None:
            await self.hosting.close()
        await self.engine.close()

    # ----- events ---------------------------------------------------------------------

    def _on_event(self, event: BaseEvent) -> None:
        if isinstance(event, SessionStarted):
            # A session reopened inside a turn is the same one, its agent restarted: the
            # screen shows its turns already, so no recap (it would follow the new answer).
            self._reopened = event.how != "new" and not self.turn_running
        if isinstance(event, CommandsAvailable) and not event.replay:
            provider = self.engine.status().provider
            if provider is not None:
                self._commands[provider] = [c.lstrip("/") for c in event.commands if c]
        self.screen.on_event(event)
        self.log.observe(event)
        if self.hosting is not None:
            self.hosting.event(event)

    def agent_commands(self) -> list[str]:
        """The slash commands the current provider's agent offers (names without the `/`)."""
        return self._commands.get(self.engine.status().provider or "", [])

    def say(self, text: str, style: str | None = None) -> None:
        """Print a line for the user."""
        self.screen.line(text, style)

    def offer_handoff(self) -> None:
        """After a switch: say how to read the handoff (shown as one line) before it is sent."""
        if self.engine.status().handoff is not None:
            self.say("Ctrl-O shows the handoff in full before your next prompt sends it", "dim")

    def show_transcript(self) -> None:
        """Ctrl-O: the transcript in a pager (`avatar.cli.repl.transcript_view`)."""
        text = render(self.log, self.engine.status().handoff)
        with self.notifier.handed_over():
            shown = page(text, self.engine.user_program)
        if not shown:
            self.screen.line(text.rstrip("\n"))

    def show_where_we_were(self) -> None:
        """After a resume, continue or fork: the last turns of the session, once."""
        if not self._reopened:
            return
        self._reopened = False
        current = self.engine.current
        history = current.history() if current is not None else None
        if history is not None:
            self.log.earlier(history.messages)
            self.screen.history(history.messages)

    def keep(self, task: asyncio.Future[Any]) -> None:
        """Hold a task a key started until it ends."""
        self._kept.add(task)
        task.add_done_callback(self._kept.discard)

    # ----- status line ----------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a turn or a slow command runs."""
        return self.work is not None and not self.work.done()

    def toolbar(self) -> str:
        """Provider, model, session, the numbers (context use, this turn's tokens, the
        session's cost), what keys do now and a spinner while busy; fitted to the width."""
        try:
            status = self.engine.status()
        except AvatarError as e:
            return f"avatar: {e}"
        parts = [
            Part(status.provider or "-", PROVIDER),
            Part(status.model or "model ?", MODEL),
            Part(status.session_id[:12] if status.session_id else "no session yet", SESSION),
            *figures(status.numbers),
        ]
        if self.asking.mode != menu.MODES[0]:  # (ask, the default, goes without saying)
            parts.append(Part(f"{self.asking.mode} mode", HINT))
        gone, elsewhere = _live_elsewhere(self.engine)
        if self.asking.pending is not None:
            parts.append(Part("answer: y / a / n", HINT))
        elif gone is not None:
            parts.append(Part(f"{gone}: Ctrl-D leaves", HINT))
        elif self.shell.offered is not None:
            parts.append(Part("add the output? y / n", HINT))
        elif self.busy:
            if self.turn_running:
                # (Until its session is open, a turn cannot be steered: a line waits.)
                steers = status.steers and status.session_id is not None
                hint = "busy: typing steers" if steers else "busy: typing queues"
                parts.append(Part(hint, HINT))
            quiet = time.monotonic() - self.screen.last_output
            if self.screen.pending:
                parts.append(Part(f"… {self.screen.pending[-40:]}", TAIL))
            elif quiet > QUIET and self.screen.activity:
                frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
                parts.append(Part(f"{frame} {self.screen.activity}… {quiet:.0f}s", ACTIVITY))
        elif elsewhere is not None:
            parts.append(Part(f"{elsewhere}'s turn: Ctrl-C interrupts it", HINT))
        else:
            parts.append(Part("idle", HINT))
        import shutil

        return fit(parts, shutil.get_terminal_size((100, 24)).columns)

    # ----- turns ----------------------------------------------------------------------

    async def run_turn(self, prompt: str, client: str | None = None) -> None:
        """One turn (`client`: another client's prompt, shown with its name), then what was
        queued while it ran."""
        self.turn_running = True
        failed: AvatarError | None = None
        try:
            self.screen.begin_turn()
            if client is not None:
                self.screen.on_event(UserMessage(text=f"({client}) {prompt}"))
            if self.hosting is not None:
                self.hosting.turn_started(prompt, client)
            try:
                text, pasted = self.pastes.take(prompt)  # (pastes in full, images attached)
                asked = read_mentions(text, self.engine.cwd)
                asked = Prompt(self.shell.opening(asked.text), asked.images + pasted)
                self.log.prompt(asked.text)
                await self.asking.apply_mode()
                for image in asked.images:
                    self.say(f"(attached image {image.summary})", "dim")
                async for event in self.engine.send(asked):
                    if isinstance(event, ModeChanged) and not event.replay:
                        self.asking.follow_mode(event.mode)
                    self._on_event(event)
            except AvatarError as e:
                self.screen.flush()
                self.say(f"avatar: {e}", "bold red")
                failed = e
                if client is None and _not_sent(e):
                    self.keep_prompt(prompt)
            except Exception as e:  # a bug ends the turn, said, as a command's does; the
                if os.environ.get("AVATAR_DEBUG"):  # REPL and what was typed meanwhile go on
                    raise
                self.screen.flush()
                failed = AvatarError(f"internal error: {type(e).__name__}: {e}")
                self.say(f"avatar: {failed}", "bold red")
        finally:
            self.turn_running = False
            if self.hosting is not None:
                self.hosting.turn_ended(failed)
            self.notifier.ring(
                f"{self._provider()} " + ("stopped: an error" if failed else "is done")
            )
        await self._next()

    def keep_prompt(self, prompt: str) -> None:
        """`prompt` was not answered (the server it was sent to is gone): back in the input
        line when that is empty, else in its history (the up arrow), and said so."""
        if self.put_back is not None and self.put_back(prompt):
            self.say("(your prompt is back in the input line)", "dim")
        else:
            self.say("(your prompt was kept: the up arrow brings it back)", "dim")

    def _provider(self) -> str:
        return self.engine.status().provider or "avatar"

    def queue(self, line: str, client: str | None = None) -> None:
        """Keep `line` (`client`'s prompt, if another client sent it) for when the running
        turn or command ends, and say so."""
        self.queued.append((line, client))
        after = "this turn" if self.turn_running else self.screen.activity or "this command"
        self.say(f"(queued for after {after}: {_shown(line, client)})", "dim")
        if self.hosting is not None:
            self.hosting.changed()

    def take(self, prompt: str, client: str) -> None:
        """A prompt another client sent to this session (`avatar attach`): a turn now, or
        queued after the running work, in order with the REPL's own lines."""
        if self.busy:
            self.queue(prompt, client)
        else:
            self.work = asyncio.create_task(self.run_turn(prompt, client))

    async def _next(self) -> None:
        """The running work is over: start what was queued meanwhile, in order (a command
        that runs at once lets the next line go too)."""
        self.work = None
        self.ended += 1
        while self.queued and not self.busy:
            line, client = self.queued.popleft()
            if self.hosting is not None:
                self.hosting.changed()
            if client is not None:  # another client's prompt: a turn, never a command
                self.work = asyncio.create_task(self.run_turn(line, client))
                continue
            self.screen.user_line(line)  # where it runs, as if typed now
            if await self.handle(line):
                self.queued.clear()
                break

    async def submit(self, text: str) -> None:
        """Start a turn, or steer/queue when one is running."""
        if self.busy and self.turn_running and await self.engine.steer(self.pastes.expand(text)):
            self.say("(steering the running turn)", "dim")
        elif self.busy:
            self.queue(text)
        else:
            self.work = asyncio.create_task(self.run_turn(text))

    async def wait(self) -> None:
        """Wait for the running turn or command (used when input is not a terminal)."""
        if self.work is not None:
            await self.work

    async def interrupt(self) -> None:
        """Ctrl-C or Esc: stop the running turn (on a live session attached to: another
        client's turn too). The lines queued meanwhile go back into the input box (`refill`;
        without one they are said dropped), other clients' prompts back to them."""
        if not self.busy and self.engine.turn_elsewhere:
            with self.screen.together():
                self.screen.interrupted()
                self.say("(interrupted)", "dim")
            await self.engine.cancel()
        elif self.busy:
            own = [line for line, client in self.queued if client is None]
            theirs = [(line, client) for line, client in self.queued if client is not None]
            for line, client in theirs:
                if self.hosting is not None:
                    self.hosting.dropped(line, client)
            self.queued.clear()
            self.asking.deny()
            if self.hosting is not None and self.turn_running:
                self.hosting.cancelled()
            # Said at once, and nothing more of the answer is shown: what the agent still
            # sends while it stops is not what was asked for.
            with self.screen.together():
                self.screen.interrupted()
                self.say("(interrupted)", "dim")
                if own and self.refill is not None:
                    self.refill(own)
                    self.say(f"({_count(own, 'queued line')} back in the box)", "dim")
                dropped = [_shown(line, client) for line, client in theirs]
                dropped = dropped if self.refill is not None else [*own, *dropped]
                if dropped:
                    said = " | ".join(dropped)
                    self.say(f"(dropped {_count(dropped, 'queued line')}: {said})")
            self.shell.stop()  # (a `!command` running: it and all it started)
            await self.engine.cancel()

    # ----- commands -------------------------------------------------------------------

    async def command(self, line: str) -> bool:
        """Run a slash command; True means leave. Slow ones run as a task."""
        try:
            words = shlex.split(line)
        except ValueError as e:
            self.say(f"avatar: {e}", "red")
            return False
        cmd = lookup(words[0])
        if cmd is None and words[0][1:] in self.agent_commands():
            await self.submit(line)  # the agent's own command: the agent runs it
            return False
        if cmd is None:
            self.say(f"avatar: unknown command {words[0]} (/help lists them)", "red")
            return False
        if self.busy and not cmd.while_busy:
            self.queue(line)
            return False
        if cmd.name in ("/resume", "/rewind") and len(words) == 1 and sys.stdin.isatty():
            chosen = await self._pick(cmd.name)  # (a prompt of its own: before the line is back)
            if chosen is None:
                return False
            words += chosen
        if cmd.while_busy:
            return await self._guarded(cmd.handler(self, words[1:]))
        self.screen.activity = cmd.doing(words[1:])
        self.screen.last_output = time.monotonic()
        self.work = asyncio.create_task(self._run_command(cmd.handler(self, words[1:])))
        return False

    def run_shell(self, line: str) -> None:
        """`!command`: run it (`avatar.cli.repl.shell_command`) as the running work, or
        queue it after the running work."""
        if self.busy:
            self.queue(line)
            return
        self.screen.activity = "running the command"
        self.screen.last_output = time.monotonic()
        self.work = asyncio.create_task(self._run_command(self.shell.run(line[1:].strip())))

    async def _pick(self, name: str) -> list[str] | None:
        """At a terminal, `/resume` or `/rewind` alone asks for what it is given (None:
        cancelled)."""
        if name == "/rewind":
            from avatar.cli.repl.rewind import pick

            return await pick(self)
        from avatar.cli.repl.picker import pick_session

        chosen = await pick_session(self.engine.sessions(), self.engine.transcript)
        return [chosen.id] if chosen is not None else None

    async def _guarded(self, call: Awaitable[bool]) -> bool:
        try:
            return await call
        except AvatarError as e:
            self.say(f"avatar: {e}", "red")
        except Exception as e:  # a bug must not end the REPL, nor pass unseen
            if os.environ.get("AVATAR_DEBUG"):
                raise
            self.say(f"avatar: internal error: {type(e).__name__}: {e}", "bold red")
        return False

    async def _run_command(self, call: Awaitable[bool]) -> None:
        await self._guarded(call)
        self.screen.activity = ""
        self.show_where_we_were()
        await self._next()

    # ----- input ----------------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Dispatch one input line; True means leave."""
        if self.asking.answer_line(line):
            return False  # (an answer, or `yes⏎` typed after `y` had answered: its rest)
        text = line.strip()
        if not text:
            return False
        if self.shell.offered is not None and text.lower() in ("y", "yes", "n", "no"):
            self.shell.answer(text.lower().startswith("y"))  # (typed, not taken as one key)
            return False
        self.shell.withdraw()  # (a `!command`'s output not added: something else was typed)
        if text.startswith("!"):
            self.run_shell(text)
            return False
        if text.startswith("/"):
            return await self.command(text)
        await self.submit(text)
        return False


def _count(items: list[str], noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) > 1 else ''}"


def _shown(line: str, client: str | None) -> str:
    """A queued line as the REPL shows it: another client's with its name."""
    return f"({client}) {line}" if client is not None else line


def _not_sent(error: AvatarError) -> bool:
    """Whether `error` says a prompt went unanswered because the server it went to is gone
    (`avatar attach`)."""
    from avatar.server.remote import NotSent

    return isinstance(error, NotSent)


def _live_elsewhere(engine: Engine) -> tuple[str | None, str | None]:
    """On a live session attached to (`avatar attach`): why it is no longer reachable (None
    while it is), and whose turn runs when another client's does."""
    from avatar.server.remote import RemoteEngine

    if not isinstance(engine, RemoteEngine):
        return None, None
    return engine.gone, engine.turn_client
