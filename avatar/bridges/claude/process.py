"""One running `claude -p` stream-json process: its input, its output, its turns.

The process is an `AgentProcess` (explicit env, stderr drained into a tail, own process
group, clean shutdown). On top of it this module reads stdout line by line and routes each
JSON message: answers to avatar's own control requests (`interrupt`, `set_model`) wake the
request waiting for them; the CLI's control requests (permission questions) go to the
`on_control` callback; everything else is translated (`claude_stream`) into the events of
the process's open `Turn`, which its `result` finishes. The end of stdout ends the open turn
with a `died` signal. A process only ever feeds its own turns, so the output of a process
being replaced can never reach the next one's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.bridges.claude.stream import StreamTranslator, control_request
from avatar.bridges.process import AgentProcess
from avatar.bridges.turn import Turn, TurnSignal
from avatar.core.errors import ProviderError
from avatar.core.events import TurnFinished
from avatar.core.surrogates import loads

if TYPE_CHECKING:
    from avatar.policy.sandbox import Sandbox

# How long a control request (interrupt, set_model) may wait for its answer.
CONTROL_TIMEOUT = 10.0
# Undecodable stdout lines kept for error messages (a CLI that prints plain text and dies).
JUNK_LINES = 5

ControlHandler = Callable[["ClaudeProcess", "Turn | None", dict[str, Any]], None]
"""Receives each control request of the CLI with the turn it arrived in (None between
turns); it must answer it (the CLI waits), typically from a task."""


class ClaudeProcess:
    """A spawned claude: write messages, send control requests, run turns.

    `model` is the model the process runs with (its `--model`, then each `set_model` sent),
    so the bridge can tell whether a switch still has to be applied; `turns_done` counts the
    turns that reached their `result` (by then claude has written the session to disk).
    """

    def __init__(
        self,
        name: str,
        agent: AgentProcess,
        cwd: Path,
        model: str | None,
        on_control: ControlHandler,
    ) -> None:
        self.name = name
        self.agent = agent
        self.cwd = cwd
        self.model = model
        self.plan = False  # in plan mode (`set_permission_mode` sent); starts in the argv's
        self.translator = StreamTranslator(cwd)
        self.turn: Turn | None = None
        self.turns_done = 0
        self.eof = False
        self._stopping: asyncio.Task[None] | None = None
        self._on_control = on_control
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._junk: deque[str] = deque(maxlen=JUNK_LINES)
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def spawn(
        cls,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        *,
        install_hint: str = "",
        model: str | None,
        on_control: ControlHandler,
        sandbox: Sandbox | None = None,
    ) -> ClaudeProcess:
        """Start claude with exactly `env` in `cwd` (inside `sandbox` when given); a
        ProviderError when it cannot run."""
        agent = await AgentProcess.spawn(name, argv, env, cwd, install_hint, sandbox)
        return cls(name, agent, cwd, model, on_control)

    @property
    def pid(self) -> int:
        """The process id (also its process group id)."""
        return self.agent.pid

    @property
    def alive(self) -> bool:
        """True while the process runs and its stdout is open."""
        return not self.eof and self.agent.returncode is None

    def begin_turn(self) -> Turn:
        """A new turn: the output from now on is its events (the previous one is left as
        it is; the bridge ends an unfinished one before starting another)."""
        self.translator.begin_turn()
        self.turn = Turn()
        if self.eof:  # nothing will ever answer: the turn ends at once
            self.turn.put(TurnSignal("died", self))
        return self.turn

    # ----- output -----------------------------------------------------------------------------

    async def _read(self) -> None:
        stream = self.agent.process.stdout
        assert stream is not None
        try:
            while True:
                try:
                    line = await stream.readline()
                except ValueError:  # a line over the stream limit: drop it, keep reading
                    continue
                if not line:
                    break
                self._route(line)
        finally:
            self.eof = True
            self._fail_pending("the claude process ended")
            if self.turn is not None:  # an open turn ends here; a finished one drops it
                self.turn.put(TurnSignal("died", self))

    def _route(self, line: bytes) -> None:
        try:
            msg = loads(line)
        except ValueError:
            self._junk.append(line.decode("utf-8", "replace"))
            return
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        turn = self.turn if self.turn is not None and not self.turn.finished else None
        if kind == "control_response":
            response = msg.get("response") or {}
            fut = self._pending.pop(str(response.get("request_id")), None)
            if fut is not None and not fut.done():
                fut.set_result(response)
        elif kind == "control_request":
            self._on_control(self, turn, msg)
        elif turn is not None and kind != "control_cancel_request":
            # Output between turns (nothing is asked then) belongs to no turn: dropped.
            self.translator.cancelled = turn.cancelling
            events = self.translator.feed(msg)
            for event in events:
                turn.put(event)
            if kind == "result":
                self.turns_done += 1
                ends = [e.stop_reason for e in events if isinstance(e, TurnFinished)]
                # Finished before the caller reads TurnFinished: one that stops reading
                # there has not abandoned the turn.
                turn.finish(ends[-1] if ends else None)

    # ----- input ------------------------------------------------------------------------------

    async def write(self, message: dict[str, Any]) -> None:
        """Write one message line; a ProviderError when the process cannot take it."""
        stdin = self.agent.process.stdin
        if stdin is None or not self.alive:
            if self.agent.returncode is not None:
                raise ProviderError(self.agent.death(self.name))
            raise ProviderError(f"{self.name}: the claude process is not running")
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode()
        try:
            stdin.write(data)
            await stdin.drain()
        except (ConnectionError, RuntimeError) as e:
            raise ProviderError(f"{self.name}: cannot write to claude: {e}") from None

    async def control(self, subtype: str, **fields: Any) -> dict[str, Any]:
        """Send a control request and wait for its answer (`{"subtype": "success"|"error"}`).

        TimeoutError after CONTROL_TIMEOUT; ProviderError when the process ends first.
        """
        request_id = f"avatar-{os.urandom(6).hex()}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        try:
            await self.write(control_request(request_id, subtype, **fields))
            return await asyncio.wait_for(fut, CONTROL_TIMEOUT)
        finally:
            self._pending.pop(request_id, None)

    def _fail_pending(self, why: str) -> None:
        # An error, not a cancellation: whoever waits learns the process is gone, and a
        # cancellation of the waiter itself stays distinguishable.
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ProviderError(f"{self.name}: {why}"))
        self._pending.clear()

    # ----- shutdown ---------------------------------------------------------------------------

    async def stop(self) -> None:
        """Close stdin, wait, terminate, kill; then let the reader see the end.

        Idempotent: later callers wait for the first stop (signalling the process group a
        second time could reach a reused pid), and a cancelled caller does not cut it short.
        """
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._stop())
        await asyncio.shield(self._stopping)

    async def _stop(self) -> None:
        await self.agent.stop()
        if not self._reader.done():
            # Stdout of a killed process ends at once; the timeout guards a stuck pipe only.
            await asyncio.wait({self._reader}, timeout=2.0)
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self._fail_pending("the claude process was stopped")

    async def exit_report(self) -> tuple[str, str | None]:
        """How the process ended and what it said last: (`exited (exit code N)`, stderr tail).

        The tail falls back to undecodable stdout lines when stderr was empty.
        """
        await self.agent.stderr_settled()
        detail = self.agent.stderr.text(20)
        if not detail.strip() and self._junk:
            detail = "".join(self._junk).strip()
        return f"exited ({self.agent.describe_exit()})", detail or None
