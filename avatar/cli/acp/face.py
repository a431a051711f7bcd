"""One ACP session of `avatar acp`: an engine of its own (one project, one open session on one
agent at a time), the client it answers to, its permission mode, and its turns.

The ACP session keeps the id it was opened with while the engine moves between agents'
sessions under it (a provider switch, a fork): the client's id stays valid, and `avatar
session list` shows each agent's session with its lineage.

Permission questions the scope and walls let through reach the client as
`session/request_permission` (`ask`): the ACP bridge has already refused what the scope
refuses, and the permission policy (`permission: allow | deny` in config) answers by itself
before asking anyone. The modes are the REPL's: in `accept edits` an edit is allowed without
asking, in `plan` anything that changes something is refused with the REPL's words.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any

from avatar.cli.acp import options
from avatar.cli.acp.threads import Threads
from avatar.cli.acp.updates import KINDS, Tokens, message, replay, update_for
from avatar.cli.repl import menu
from avatar.core.errors import AvatarError
from avatar.core.events import CommandsAvailable, Error, Notice, TurnFinished
from avatar.core.jsonrpc import INTERNAL_ERROR, RpcError

if TYPE_CHECKING:
    from avatar.core.events import BaseEvent, PermissionRequested
    from avatar.core.jsonrpc import Connection
    from avatar.core.prompts import Prompt
    from avatar.engine.engine import Engine
    from avatar.policy.permissions import Answer, Refusal

#: The answers offered at a permission question, by option id: ACP's kinds, avatar's answers.
PERMISSION_OPTIONS = (
    ("allow", "Allow", "allow_once"),
    ("always", "Allow for this session", "allow_always"),
    ("deny", "Deny", "reject_once"),
)


class Face:
    """One ACP session; see the module docstring."""

    def __init__(self, session_id: str, engine: Engine, conn: Connection, found: list[str]):
        self.id = session_id
        self.engine = engine
        self.conn = conn
        self.found = found  #: the providers the menu offers
        self.mode: str = menu.MODES[0]
        self.lock = asyncio.Lock()  # one turn, command or change at a time
        self.agent_commands: list[tuple[str, str]] = []  # the agent's own (name, description)
        self.heard: list[str] | None = None  # notices collected while a command runs
        self._tasks: set[asyncio.Task[Any]] = set()
        self.threads = Threads(engine.home)
        self._at: tuple[str, str] | None = None  # the agent's session it is on (provider, id)
        engine.subscribe(self._outside)
        engine.set_permission_handler(self.ask)

    @property
    def cwd(self) -> str:
        """The session's project directory."""
        return str(self.engine.cwd)

    # -- to the client ----------------------------------------------------------------------

    async def update(self, update: dict[str, Any]) -> None:
        """Send one `session/update` of this session."""
        await self.conn.notify("session/update", {"sessionId": self.id, "update": update})

    def later(self, work: Any) -> None:
        """Run `work` (a coroutine) after the answer being made is sent."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _outside(self, event: BaseEvent) -> None:
        """Events outside turns: notices (collected for a command's answer, and on stderr),
        an agent's death, the agent's own commands."""
        if event.replay:
            return
        if isinstance(event, Notice):
            self.note(event.message)
        elif isinstance(event, Error):
            sys.stderr.write(f"avatar: {event.message}\n")
        elif isinstance(event, CommandsAvailable):
            self._commands(event)

    def note(self, message: str) -> None:
        """A notice: on stderr (the client's log), and in a command's answer."""
        masked = self.engine.registry.secrets().mask(message)
        sys.stderr.write(f"notice: {masked}\n")
        sys.stderr.flush()
        if self.heard is not None:
            self.heard.append(masked)

    def _commands(self, event: CommandsAvailable) -> None:
        from avatar.cli.acp.slash import commands_update

        self.agent_commands = [(name.lstrip("/"), "") for name in event.commands if name]
        self.later(self.update(commands_update(self)))

    def kept(self) -> None:
        """Record where this ACP session is now when it moved to another agent's session
        (`avatar.cli.acp.threads`): a later `session/load` of its id opens there."""
        current = self.engine.current
        if current is None:
            return
        at = (current.provider, current.session_id)
        if at != self._at:
            if self._at is not None or at[1] != self.id:
                self.threads.moved(self.id, *at)
            self._at = at

    # -- what the client sees of the session ------------------------------------------------

    def config_options(self) -> list[dict[str, Any]]:
        """The menus as they stand (`avatar.cli.acp.options`)."""
        return options.config_options(self.engine, self.found)

    def opened(self) -> dict[str, Any]:
        """The answer of `session/new` and `session/load` (without the id)."""
        current = self.engine.current
        modes = options.modes(self.mode, current is None or current.can_plan)
        return {"configOptions": self.config_options(), "modes": modes}

    async def replay(self) -> None:
        """Replay the open session's history (before `session/load` is answered)."""
        current = self.engine.current
        try:
            history = current.history() if current is not None else None
        except AvatarError as e:
            self.note(f"could not read the session's history: {e}")
            return
        if history is None:
            return
        mask = self.engine.registry.secrets().mask
        for update in replay(history.messages, mask):
            await self.update(update)

    # -- turns ------------------------------------------------------------------------------

    async def prompt(self, asked: Prompt) -> dict[str, Any]:
        """One prompt: a command of avatar's (`/provider`, …) answered here, else a turn of
        the agent, its events streamed as updates; the prompt's answer."""
        from avatar.cli.acp.slash import run_command

        async with self.lock:
            try:
                said = await run_command(self, asked.text)
                if said is None:
                    return await self._turn(asked)
            finally:
                self.kept()
            await self.update(message(said))
            return {"stopReason": "end_turn"}

    async def _turn(self, asked: Prompt) -> dict[str, Any]:
        tokens, stop, errors = Tokens(), "end_turn", []
        try:
            await self._apply_mode()
            async for event in self.engine.send(asked):
                if event.replay:
                    continue
                tokens.observe(event)
                if isinstance(event, TurnFinished):
                    stop = event.stop_reason
                elif isinstance(event, Error):
                    errors.append(event.message)
                elif isinstance(event, Notice):
                    self.note(event.message)
                elif isinstance(event, CommandsAvailable):
                    self._commands(event)
                elif (update := update_for(event, self.cwd)) is not None:
                    await self.update(update)
        except AvatarError as e:
            raise RpcError(INTERNAL_ERROR, self._masked(str(e))) from None
        if stop == "error" or (errors and stop != "cancelled"):
            raise RpcError(INTERNAL_ERROR, self._masked("; ".join(errors) or "the turn failed"))
        answer: dict[str, Any] = {"stopReason": stop}
        usage = tokens.usage()
        if usage is not None:
            answer["usage"] = usage
        return answer

    def _masked(self, text: str) -> str:
        return str(self.engine.registry.secrets().mask(text))

    async def _apply_mode(self) -> None:
        """Before a turn: the agent's plan mode on or off as the session's mode says."""
        current = self.engine.current
        if current is not None and current.can_plan:
            await current.set_plan(self.mode == menu.PLAN)
        elif self.mode == menu.PLAN:
            self.mode = menu.MODES[0]
            self.note(f"{self.engine.chosen_provider()} has no plan mode; back to ask")
            back = {"sessionUpdate": "current_mode_update", "currentModeId": "ask"}
            self.later(self.update(back))

    async def cancel(self) -> None:
        """`session/cancel`: interrupt the running turn (it answers `cancelled`)."""
        await self.engine.cancel()

    # -- permissions ------------------------------------------------------------------------

    async def ask(self, request: PermissionRequested) -> Answer | Refusal:
        """The engine's permission handler: the mode's own answer, else the client's."""
        if self.mode == "accept edits" and request.kind == "edit":
            return "allow"
        if self.mode == menu.PLAN and request.kind not in menu.PLAN_ASKED:
            return menu.PLAN_REFUSAL
        call = {
            "toolCallId": request.id,
            "title": self._masked(request.title),
            "kind": request.kind if request.kind in KINDS else "other",
            "status": "pending",
        }
        offered = [{"optionId": i, "name": n, "kind": k} for i, n, k in PERMISSION_OPTIONS]
        params = {"sessionId": self.id, "toolCall": call, "options": offered}
        try:
            answer = await self.conn.request("session/request_permission", params)
        except (RpcError, ConnectionError) as e:
            self.note(f"denied {request.title!r}: the client did not answer ({e})")
            return "deny"
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
        selected = isinstance(outcome, dict) and outcome.get("outcome") == "selected"
        if selected and chosen in ("allow", "always"):
            return "allow" if chosen == "allow" else "always"
        return "deny"

    # -- changes ----------------------------------------------------------------------------

    async def set_option(self, config_id: str, value: Any) -> list[dict[str, Any]]:
        """`session/set_config_option`: `provider` switches (with the handoff), `model` sets
        the model; the options as they then stand."""
        if not isinstance(value, str) or not value:
            raise RpcError(-32602, f"{config_id}: the value must be a non-empty string")
        async with self.lock:
            try:
                if config_id == "provider":
                    await self.switch(value)
                elif config_id == "model":
                    if value != options.AGENT_DEFAULT:
                        await self.engine.set_model(value)
                else:
                    raise RpcError(-32602, f"no such config option: {config_id}")
            except AvatarError as e:
                raise RpcError(-32602, self._masked(str(e))) from None
            finally:
                self.kept()
        return self.config_options()

    async def switch(self, provider: str, **how: Any) -> None:
        """Switch this session to `provider` (the handoff carried unless `how` says not), and
        tell the client what it now offers."""
        from avatar.cli.acp.slash import commands_update

        await self.engine.switch_provider(provider, **how)
        self.agent_commands = []  # (the new agent says its own)
        self.later(self.update(commands_update(self)))

    def set_mode(self, mode_id: str) -> None:
        """`session/set_mode`: a permission mode (plan where the agent has one)."""
        mode = options.mode_named(mode_id)
        current = self.engine.current
        if mode is None or (mode == menu.PLAN and current is not None and not current.can_plan):
            raise RpcError(-32602, f"no such mode: {mode_id}")
        self.mode = mode

    async def close(self) -> None:
        """Stop the session's agent (its session stays listed and can be loaded again)."""
        for task in list(self._tasks):
            task.cancel()
        await self.engine.close()
