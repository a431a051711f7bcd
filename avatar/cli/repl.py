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
from typing import Any

from avatar.bridges.base import OpenRequest
from avatar.cli import settled
from avatar.cli.chat import plan_open
from avatar.cli.render import LineRenderer
from avatar.errors import AvatarError
from avatar.events import BaseEvent, PermissionRequested, SessionStarted, Usage

HELP = """\
/help                     this list
/sessions [--all]         sessions of this project (--all: every directory)
/session                  the current session
/resume ID                resume a session (any provider; id or unique prefix)
/continue                 the newest session of this provider here
/new                      a fresh session on this provider
/provider NAME [--fresh]  switch provider, handing the conversation over (unless --fresh)
/model NAME               switch model
/preset NAME              apply a preset from config
/fork                     fork the current session
/compact                  compact the context (native)
/clear                    clear the screen
/status                   provider, model, session, context use, tokens and cost
/quit, /exit              leave (Ctrl-D too); Ctrl-C interrupts a running turn"""


class Repl:
    """State of one interactive run."""

    def __init__(self, state: Any) -> None:
        self.state = state
        self.engine = state.engine(interactive=True)
        self.engine.asker = self._ask_permission
        self.renderer = LineRenderer(json_out=False, err=sys.stdout)
        self.engine.listeners.append(self._on_event)
        self.session: SessionStarted | None = None
        self.usage = Usage()
        self.turn: asyncio.Task[None] | None = None
        self.queued: deque[str] = deque()
        self.permission_answer: asyncio.Future[bool] | None = None

    # ----- events ---------------------------------------------------------------------

    def _on_event(self, event: BaseEvent) -> None:
        if isinstance(event, SessionStarted):
            self.session = event
            self.usage = Usage()
        if isinstance(event, Usage) and not event.replay:
            self.usage = event
        self.renderer.on_event(event)

    def say(self, text: str) -> None:
        """Print a line for the user."""
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    async def _ask_permission(self, request: PermissionRequested) -> bool:
        loop = asyncio.get_running_loop()
        self.permission_answer = loop.create_future()
        self.say(f"permission: allow {request.title!r}? [y/N]")
        try:
            return await self.permission_answer
        finally:
            self.permission_answer = None

    def toolbar(self) -> str:
        """The status line: provider, model, session id, context use, tokens/cost."""
        s = self.session
        parts = [
            s.provider if s else "-",
            self.engine.model or (s.model if s else None) or "default",
        ]
        parts.append(s.session_id if s else "no session")
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
        if self.session is None:
            await self.engine.open_on(self.provider(), OpenRequest("new"))
        if self.turn is not None and not self.turn.done():
            bridge = self.engine.bridge
            if bridge is not None and await bridge.steer(text):
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
        if self.turn is not None and not self.turn.done():
            self.queued.clear()
            await self.engine.cancel()
            self.say("(interrupted)")

    def provider(self) -> str:
        """The current session's provider, else `-p`, else the automatic choice."""
        if self.session is not None:
            return self.session.provider
        return plan_open(self.engine, self.state.provider)[0]

    # ----- commands -------------------------------------------------------------------

    async def command(self, line: str) -> bool:
        """Run a slash command; True means leave."""
        try:
            words = shlex.split(line)
        except ValueError as e:
            self.say(f"avatar: {e}")
            return False
        cmd, args = words[0].lower(), words[1:]
        busy = self.turn is not None and not self.turn.done()
        if busy and cmd not in ("/help", "/status", "/session", "/sessions", "/quit", "/exit"):
            self.say("avatar: wait for the running turn to finish (Ctrl-C interrupts it)")
            return False
        try:
            return await self._dispatch(cmd, args)
        except AvatarError as e:
            self.say(f"avatar: {e}")
            return False

    async def _dispatch(self, cmd: str, args: list[str]) -> bool:
        from avatar.cli.table import render_table

        engine = self.engine
        if cmd in ("/quit", "/exit"):
            return True
        if cmd == "/help":
            self.say(HELP)
        elif cmd == "/sessions":
            rows = engine.list_sessions(None, any_cwd="--all" in args)[:50]
            for w in engine.warnings():
                self.say(f"warning: {w}")
            table = [[s.provider, s.id, (s.title or "")[:50], str(s.messages)] for s in rows]
            self.say(render_table(["provider", "id", "title", "messages"], table).rstrip())
        elif cmd == "/session":
            s = self.session
            self.say(f"{s.session_id} ({s.provider}, {s.how})" if s else "no session yet")
        elif cmd == "/resume":
            if len(args) != 1:
                self.say("usage: /resume ID")
            else:
                await engine.resume(args[0])
        elif cmd == "/continue":
            await engine.continue_last(self.provider())
        elif cmd == "/new":
            await engine.open_on(self.provider(), OpenRequest("new"))
        elif cmd == "/provider":
            names = [a for a in args if not a.startswith("--")]
            if len(names) != 1:
                self.say("usage: /provider NAME [--fresh]")
            else:
                await engine.switch_provider(names[0], handoff="--fresh" not in args)
        elif cmd == "/model":
            if len(args) != 1:
                self.say(f"model: {engine.model or 'default'}")
            else:
                if engine.bridge is not None:
                    await engine.bridge.set_model(args[0])
                engine.model = args[0]
                engine.remember_settings()
                self.say(f"model: {args[0]}")
        elif cmd == "/preset":
            await self._preset(args)
        elif cmd == "/fork":
            if self.session is None:
                self.say("no session to fork")
            else:
                await engine.open_on(
                    self.session.provider, OpenRequest("fork", self.session.session_id)
                )
        elif cmd == "/compact":
            compact = getattr(engine.bridge, "compact", None)
            if compact is None:
                name = self.session.provider if self.session else "this provider"
                self.say(f"avatar: compaction is not supported by {name}")
            else:
                self.say(str(await compact()))
        elif cmd == "/clear":
            sys.stdout.write("\x1b[2J\x1b[H")
        elif cmd == "/status":
            self.say(self.toolbar())
            if engine.bridge is not None:
                caps = ", ".join(engine.bridge.session_capabilities.names()) or "none"
                self.say(f"capabilities: {caps}")
                for k, v in engine.bridge.status().items():
                    self.say(f"{k}: {v}")
        else:
            self.say(f"avatar: unknown command {cmd} (/help lists them)")
        return False

    async def _preset(self, args: list[str]) -> None:
        if len(args) != 1:
            self.say("usage: /preset NAME")
            return
        settings = self.engine.settings.apply_preset(args[0])
        self.engine.settings = settings
        self.engine.model = settings.model
        self.engine.remember_settings()
        self.say(f"preset {args[0]} applied")
        current = self.session.provider if self.session else None
        if settings.provider and settings.provider != current:
            await self.engine.switch_provider(settings.provider)

    # ----- input loops ----------------------------------------------------------------

    async def handle(self, line: str) -> bool:
        """Dispatch one input line; True means leave."""
        text = line.strip()
        if self.permission_answer is not None and not self.permission_answer.done():
            self.permission_answer.set_result(text.lower() in ("y", "yes"))
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
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.patch_stdout import patch_stdout

        history = self.engine.home / "history"
        history.parent.mkdir(parents=True, exist_ok=True)
        prompt: PromptSession[str] = PromptSession(history=FileHistory(str(history)))
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


def run_repl(state: Any, *, resume: str | None, cont: bool, source: str | None) -> int:
    """Start the REPL (optionally resuming, continuing, or seeded from another session)."""
    return asyncio.run(_main(state, resume, cont, source))


async def _main(state: Any, resume: str | None, cont: bool, source: str | None) -> int:
    repl = Repl(state)
    engine = repl.engine
    try:
        if resume or cont or source:
            provider, request = plan_open(engine, state.provider, resume=resume, cont=cont)
            handoff = engine.handoff_from(engine.find_session(source)) if source else None
            await engine.open_on(provider, request)
            if handoff:
                engine.seed(handoff)
                repl.say("(the other session's conversation will open this one)")
        settled()
        if sys.stdin.isatty():
            repl.say("avatar REPL — /help for commands, Ctrl-D to leave")
            await repl.run_tty()
        else:
            await repl.run_lines()
        if repl.turn is not None and not repl.turn.done():
            await engine.cancel()
            await repl.turn
    finally:
        await engine.stop()
    return 0
