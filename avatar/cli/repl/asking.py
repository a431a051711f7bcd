"""The REPL's permission questions and its permission mode.

When the agent asks, the menu shows the action (with its diff for an edit) and waits for an
answer: a line typed, or one key (`y`, `a`, `n`: `avatar.cli.repl.keys`). The mode (Shift-Tab:
ask, accept edits, plan) decides what is asked at all, and puts the agent's own plan mode on
or off before each turn. On a live session attached to, the answer that applies is the
session's (the first of two clients answering at once), shown alike on both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from avatar.cli.repl import menu
from avatar.policy.permissions import allows

if TYPE_CHECKING:
    from avatar.cli.repl.notify import Notifier
    from avatar.cli.repl.screen import Screen
    from avatar.core.events import PermissionRequested
    from avatar.engine.engine import Engine
    from avatar.policy.permissions import Answer, Refusal


class Asking:
    """The permission question waiting for an answer (`pending`), and the mode."""

    def __init__(
        self, engine: Engine, screen: Screen, notifier: Notifier, say: Callable[..., None]
    ) -> None:
        self.engine, self.screen, self.notifier, self.say = engine, screen, notifier, say
        #: The question waiting for an answer, if any.
        self.pending: asyncio.Future[Answer | Refusal] | None = None
        #: Shift-Tab: ask, accept edits without asking, or plan.
        self.mode = menu.MODES[0]
        self._keyed: tuple[str, float] | None = None  # a single-key answer: (key, when)

    async def ask(self, request: PermissionRequested) -> Answer | Refusal:
        """The permission menu: the action, its diff when it edits a file, three answers
        (none in "accept edits" mode for a file edit: it is allowed; none in plan mode for an
        action that changes something: the agent is told to plan instead)."""
        if self.mode == "accept edits" and request.kind == "edit":
            return "allow"
        request = replace(request, title=self.screen.short(request.title))  # as shown
        if self.mode == menu.PLAN and request.kind not in menu.PLAN_ASKED:
            self.say(f"(plan mode: {request.title} refused)", "dim")
            return menu.PLAN_REFUSAL
        # The tool call's own event may still be on its way to the screen: let it arrive,
        # so the menu can show what the call would change.
        for _ in range(20):
            if self.screen.started_call(request.id) is not None:
                break
            await asyncio.sleep(0.01)
        self.screen.flush()
        self.say(f"permission: {request.title}", "bold yellow")
        edit = self.screen.show_proposed(request.id, request.diffs)
        self.say(menu.OPTIONS, "yellow")
        self.pending = asyncio.get_running_loop().create_future()
        self.notifier.ring(f"{self.engine.status().provider or 'avatar'} asks for permission")
        try:
            answer = await self.pending
        finally:
            self.pending = None
        answer, who = await self._settled(request, answer)
        if not allows(answer):
            self.screen.refused(request.id)
        self.say(
            menu.said(answer, request, edit) + (f" ({who} answered first)" if who else ""), "dim"
        )
        return answer

    async def _settled(
        self, request: PermissionRequested, answer: Answer | Refusal
    ) -> tuple[Answer | Refusal, str | None]:
        """The answer that applies, and who gave it when it was not this REPL: on a live
        session attached to, the session's word (two clients answering at once: the first it
        took, shown alike on both); here, the answer given."""
        from avatar.server.remote import RemoteEngine

        if isinstance(self.engine, RemoteEngine):
            return await self.engine.settle(request.id, answer)
        return answer, None

    def answer_line(self, line: str) -> bool:
        """Take an input line as the answer to the waiting question: a word of the menu, or
        what to do instead (a refusal the agent reads). True when the line is done with: it
        answered, or it is the rest of `yes` typed after `y` had answered."""
        keyed, self._keyed = self._keyed, None
        if self.pending is not None and not self.pending.done():
            answer = menu.read_answer(line)
            if answer is not None:
                self.pending.set_result(answer)
            return True
        return bool(
            keyed and time.monotonic() - keyed[1] < menu.FINISH and menu.completes(keyed[0], line)
        )

    def answer_key(self, key: str) -> None:
        """Answer the waiting question with a single key (`y`, `a`, `n`)."""
        if self.pending is not None and not self.pending.done():
            self.pending.set_result(menu.ANSWERS[key])
            self._keyed = (key, time.monotonic())

    def deny(self) -> None:
        """An interrupt: the waiting question, if any, is answered no."""
        if self.pending is not None and not self.pending.done():
            self.pending.set_result("deny")

    def cycle_mode(self) -> None:
        """Shift-Tab: the next permission mode, said on the screen (plan where the open
        session's agent has a plan mode; before the first prompt, checked when it opens)."""
        current = self.engine.current
        self.mode = menu.next_mode(self.mode, current is None or current.can_plan)
        self.say(f"(permission mode: {self.mode}; {menu.MODE_HELP[self.mode]})", "dim")

    async def apply_mode(self) -> None:
        """Before a turn: the agent's own plan mode on or off as the mode says (the session
        may have opened, or changed, since Shift-Tab)."""
        current = self.engine.current
        if current is None and self.mode == menu.PLAN:
            current = await self.engine.agent.new()
        if current is None or not current.can_plan:
            if self.mode == menu.PLAN:
                self.mode = menu.MODES[0]
                self.say(f"(plan mode: {self.engine.status().provider} has none; back to ask)")
            return
        await current.set_plan(self.mode == menu.PLAN)

    def follow_mode(self, mode: str) -> None:
        """The agent entered or left its plan mode by itself during a turn (claude-acp's
        plan approved): the mode follows, so the next turn does not undo it. (Modes set
        outside turns are avatar's own: at an open, and plan mode before a turn.)"""
        current = self.engine.current
        if (mode == menu.PLAN) == (self.mode == menu.PLAN) or not (current and current.can_plan):
            return
        self.mode = menu.PLAN if mode == menu.PLAN else menu.MODES[0]
        self.say(f"(the agent switched to {mode} mode; permission mode: {self.mode})", "dim")
