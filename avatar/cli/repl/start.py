"""How a REPL starts: on a new session, a resumed, continued or handed-over one, or attached
to a live session of the server (`avatar attach`); then the loop (`Repl`) until it is left,
and the engine closed."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from avatar.cli.repl.held import keys_held
from avatar.cli.repl.reading import read_lines, read_terminal
from avatar.cli.repl.repl import Repl
from avatar.cli.startup import settled

if TYPE_CHECKING:
    from avatar.cli.state import AppState
    from avatar.engine.engine import Engine


def run_repl(
    state: AppState,
    *,
    resume: str | None,
    cont: bool,
    source: str | None,
    permission: str | None = None,
    add_dirs: Sequence[Path] = (),
    pick: bool = False,
    imported: bool = False,
    worktree: str | None = None,
    attach: str | None = None,
) -> int:
    """Start the REPL (optionally resuming, continuing, or seeded from another session:
    a handoff, or with `imported` its conversation in this provider's own store); `attach`:
    on the server's live session of that id (`avatar attach`)."""
    # Keys typed from here on wait for the prompt, not echoed over what start-up prints.
    with keys_held() if sys.stdin.isatty() else contextlib.nullcontext():
        # Built before the loop: an unknown provider, preset or model is a usage error.
        engine = state.engine(permission=permission, add_dirs=add_dirs, remote=bool(attach))
        engine.check_model()
        from avatar.cli.signals import run_until_hangup

        if attach:
            return run_until_hangup(_attached(engine, attach))
        return run_until_hangup(_main(engine, resume, cont, source, pick, imported, worktree))


async def _main(
    engine: Engine,
    resume: str | None,
    cont: bool,
    source: str | None,
    pick: bool,
    imp: bool,
    worktree: str | None,
) -> int:
    repl = Repl(engine)
    repl.host_on_server()  # `avatar ps` lists its session, `avatar attach` reaches it
    try:
        if worktree is not None:  # (before the REPL: a bad name is the command's error)
            repl.say((await engine.enter_worktree(worktree or None)).describe())
        if resume or cont or source:
            repl.say(_opening_line(engine, resume, cont, source), "dim")  # (seconds, on gemini)
            await engine.open(resume=resume, continue_last=cont, source=source, imported=imp)
            repl.show_where_we_were()
            repl.offer_handoff()
        await _interact(repl, pick)
    finally:
        await repl.close()
    return 0


def _opening_line(engine: Engine, resume: str | None, cont: bool, source: str | None) -> str:
    """What the REPL says while the agent starts and reopens the session."""
    if source:
        return f"handing session {source} over to {engine.chosen_provider()}…"
    if resume:
        return f"resuming session {resume}…"
    return f"continuing the last {engine.chosen_provider()} session here…"


async def _attached(engine: Engine, ref: str) -> int:
    """The REPL on a live session of the server: its conversation so far, then its events
    (the running turn's first, a question waiting answerable here)."""
    from avatar.server.remote import RemoteEngine

    assert isinstance(engine, RemoteEngine)
    try:
        messages = await engine.attach(ref)
        repl = Repl(engine)
        # Each turn is timed from its start on the session, as the REPL running it times it.
        engine.on_turn_start(repl.screen.begin_turn)
        if engine.started is not None:
            repl.screen.on_event(engine.started)
        repl.screen.history(messages)
        engine.listen()
        await _interact(repl, False)
    finally:
        await engine.close()
    return 0


async def _interact(repl: Repl, pick: bool) -> None:
    settled()
    if sys.stdin.isatty():
        repl.say("avatar REPL — /help for commands, Ctrl-D to leave", "dim")
        if pick:
            await repl.command("/resume")
        await read_terminal(repl)
    else:
        await read_lines(repl)
    if repl.busy:
        await repl.engine.cancel()
        await repl.wait()
