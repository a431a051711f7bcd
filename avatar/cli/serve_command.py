"""`avatar serve [--idle-exit DURATION] [--stop]` and `avatar ps [--json]` (docs/design.md §11).

`serve` runs the user's engine server in the foreground until stopped (`--stop` from another
terminal, SIGTERM, Ctrl-C, or `--idle-exit`); `ps` lists its live sessions. `ps` runs inside
the server (`avatar.cli.served`); run here, no server runs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from avatar.cli.serve_web import web_options, web_page
from avatar.cli.served_run import SERVING
from avatar.cli.startup import settled
from avatar.core.errors import AvatarError
from avatar.core.times import ago

if TYPE_CHECKING:
    from avatar.cli.state import AppState
    from avatar.server.hub import LiveInfo


@click.command("serve")
@click.option(
    "--idle-exit",
    metavar="DURATION",
    help="End after DURATION without a client or a running turn (30m, 90s, 2h).",
)
@click.option("--stop", is_flag=True, help="End the running server and every agent it started.")
@web_options
def serve_command(idle_exit: str | None, stop: bool, web: bool, port: int | None) -> int:
    """Run the engine server: warm agents and live sessions that chat, repl, session, ps
    and attach use."""
    if stop:
        return _stop()
    from avatar.cli.library_commands import parse_age

    idle = parse_age(idle_exit, "--idle-exit").total_seconds() if idle_exit else None
    import asyncio

    from avatar.cli.served import preload, run_for
    from avatar.server.hub import Hub
    from avatar.server.serving import Server

    preload()
    # `avatar` keeps the collector off while a command starts (`avatar.cli.startup`) and
    # turns it on when the command is over: the server's command is over when it stops, so
    # it turns it on itself, or every cycle its clients leave behind stays for its life.
    settled()

    async def main() -> None:
        server = Server(Hub(), runner=run_for, idle_exit=idle)
        server.claim()  # (a second server says so before anything starts)

        def ready() -> None:
            sys.stderr.write(f"avatar server on {server.path} (pid {os.getpid()})\n")
            sys.stderr.flush()

        try:
            async with web_page(server.hub, web, port):
                await server.serve(ready)
        finally:
            server.release()  # (also when the web page could not start)

    asyncio.run(main())
    return 0


def _stop() -> int:
    from avatar.server.client import connect, pidfd_of, wait_ended, wait_released
    from avatar.server.protocol import socket_path

    conn = connect()
    if conn is None:
        raise AvatarError("no server is running")
    try:
        # (taken before it is asked to stop: a pidfd stays that process's, its pid may not)
        server = pidfd_of(conn)
        answer = conn.request({"op": "stop"})
    finally:
        conn.close()
    try:
        if "ok" not in answer:  # (refused: a process inside avatar's walls asked)
            raise AvatarError(str(answer.get("error") or "the server did not answer"))
        pid = int(answer["ok"])
        wait_released(Path(socket_path()).parent / "server.lock", 30)  # its agents are gone
        # The lock is let go as the server ends, a moment before its process does: `--stop`
        # returns once that process has ended too, so that a script can start the next.
        if server is not None:
            wait_ended(server, 30)
    finally:
        if server is not None:
            os.close(server)
    sys.stderr.write(f"stopped the server (pid {pid})\n")
    return 0


@click.command("ps")
@click.option("--json", "json_out", is_flag=True, help="As a JSON array.")
def ps_command(json_out: bool) -> int:
    """Live sessions of the running server: provider, session, project, state, model,
    tokens, since when, attached clients."""
    served = SERVING.get()
    live = served.hub.live() if served is not None else []
    if json_out:
        sys.stdout.write(json.dumps([info.to_dict() for info in live], indent=1) + "\n")
        return 0
    if served is None:
        sys.stderr.write("no server is running (avatar serve starts one)\n")
        return 0
    if not live:
        sys.stderr.write("no live sessions\n")
        return 0
    from avatar.cli.output.table import render_table

    headers = ["PROVIDER", "SESSION", "STATE", "MODEL", "TOKENS", "SINCE", "CLIENTS", "PROJECT"]
    sys.stdout.write(render_table(headers, [_row(info) for info in live]))
    return 0


_STATES = {"idle": "idle", "turn": "in a turn", "permission": "waiting on a permission"}


def _row(info: LiveInfo) -> list[str]:
    from datetime import UTC, datetime

    since = ago(datetime.fromtimestamp(info.since, UTC))
    tokens = "?" if info.tokens is None else str(info.tokens)
    clients = ", ".join(info.clients) or "-"
    return [
        info.provider,
        info.session_id,
        _STATES[info.state],
        info.model or "?",
        tokens,
        since,
        clients,
        info.project,
    ]


@click.command("attach")
@click.argument("session_id", metavar="ID")
@click.pass_obj
def attach_command(state: AppState, session_id: str) -> int:
    """The REPL on a live session of the running server: its history, the turn in progress,
    a permission question waiting (answerable here); prompts queue after other clients'."""
    from avatar.cli.repl.start import run_repl

    return run_repl(state, resume=None, cont=False, source=None, attach=session_id)
