"""`avatar acp [--permission ask|allow|deny]`: avatar as an ACP agent on stdio, for editors (Zed,
JetBrains, Neovim's CodeCompanion) and any other ACP client (docs/design.md §12).

Nothing but the protocol goes to stdout (`stdio.listen` keeps fd 1 for it); stderr carries
avatar's notices and errors, which clients keep in their logs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from avatar.cli.state import AppState


@click.command("acp")
@click.option(
    "--permission",
    type=click.Choice(["ask", "allow", "deny"]),
    help="Answer to actions that change things (config default: ask, which asks the client).",
)
@click.pass_obj
def acp_command(state: AppState, permission: str | None) -> int:
    """avatar as an ACP agent on stdio, for editors."""
    import asyncio

    from avatar.cli.acp.agent import AcpAgent
    from avatar.cli.acp.stdio import listen
    from avatar.cli.startup import settled

    stdio = listen()  # (started before click when `avatar` saw the command: the same one)
    settled()  # (a server lives long: the collector runs again from here)
    asyncio.run(AcpAgent(state, permission).serve(stdio))
    return 0
