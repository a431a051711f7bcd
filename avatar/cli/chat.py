"""`avatar chat`: one prompt, streamed; exit 0 ok, 1 agent error, 2 usage, 130 interrupted."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from avatar.bridges.base import OpenRequest
from avatar.cli import settled
from avatar.cli.render import LineRenderer
from avatar.errors import SessionNotFoundError
from avatar.ids import check_id


def plan_open(
    engine: Any,
    provider: str | None,
    *,
    resume: str | None = None,
    cont: bool = False,
    session_id: str | None = None,
) -> tuple[str, OpenRequest]:
    """Which provider to start and how to open the session, from the command-line choices.

    `--resume ID` without `-p` finds the provider owning the id. With `-p`, an id the provider's
    store does not know is still handed to the agent, which may know it (or says it does not,
    and a new session opens with a notice).
    """
    if resume:
        check_id(resume)
        if provider:
            name = engine.spec(provider).name
            try:
                info = engine.find_session(resume, name)
            except SessionNotFoundError:
                return name, OpenRequest("resume", resume)
            return name, OpenRequest("resume", info.id)
        info = engine.find_session(resume)
        return info.provider, OpenRequest("resume", info.id)
    name = engine.spec(provider).name if provider else engine.default_provider()
    if not (cont or session_id):
        # A provider's `session:` block in config sets how sessions open by default.
        cfg = engine.settings.provider_config(name)
        defaults = cfg.session if cfg is not None else None
        if defaults is not None and defaults.resume_id:
            return plan_open(engine, name, resume=defaults.resume_id)
        cont = bool(defaults and defaults.continue_last)
    if cont:
        return name, OpenRequest("continue")
    if session_id:
        return name, OpenRequest("new", check_id(session_id))
    return name, OpenRequest("new")


def run_chat(
    state: Any,
    prompt: str,
    *,
    resume: str | None,
    cont: bool,
    json_out: bool,
    permission: str | None,
    session_id: str | None,
    source: str | None,
) -> int:
    """Open (or resume) a session, run one turn, render it, and return the exit code."""
    engine = state.engine(permission=permission)
    renderer = LineRenderer(json_out)
    engine.listeners.append(renderer.on_event)
    provider, request = plan_open(
        engine, state.provider, resume=resume, cont=cont, session_id=session_id
    )
    handoff = engine.handoff_from(engine.find_session(source)) if source else None
    return asyncio.run(_turn(engine, renderer, provider, request, prompt, handoff))


async def _turn(
    engine: Any,
    renderer: LineRenderer,
    provider: str,
    request: OpenRequest,
    prompt: str,
    handoff: str | None,
) -> int:
    interrupted = False
    cancelling: list[asyncio.Task[None]] = []
    loop = asyncio.get_running_loop()

    def on_sigint() -> None:
        nonlocal interrupted
        if interrupted:  # a second Ctrl-C while cancelling: give up at once
            raise KeyboardInterrupt
        interrupted = True
        cancelling.append(loop.create_task(engine.cancel()))

    loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        await engine.open_on(provider, request)
        settled()
        if handoff:
            engine.seed(handoff)
        async for event in engine.send(prompt):
            renderer.on_event(event)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        await engine.stop()
    if interrupted or renderer.stop_reason == "cancelled":
        return 130
    return 1 if renderer.errors else 0
