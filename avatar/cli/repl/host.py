"""What the slash commands and the input line need of the REPL: a narrow interface (`Repl` is
the one implementation), so that they do not import the REPL that imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

    from avatar.cli.repl.screen import Screen
    from avatar.engine.engine import Engine
    from avatar.policy.permissions import Answer


class ReplHost(Protocol):
    """One interactive run, as its commands and its input line see it."""

    engine: Engine
    screen: Screen
    #: The permission question waiting for an answer, if any.
    permission: asyncio.Future[Answer] | None

    def say(self, text: str, style: str | None = None) -> None:
        """Print a line of avatar's own between turns."""

    def offer_handoff(self) -> None:
        """Say that a handoff waits for the next prompt (Ctrl-O shows it)."""

    def show_handoff(self) -> None:
        """Print the waiting handoff in full."""

    def answer_permission(self, text: str) -> bool:
        """Answer the waiting permission question with `text`; False when it is no answer."""

    def toolbar(self) -> str:
        """The status line."""

    def agent_commands(self) -> list[str]:
        """The slash commands the running agent offers (names without the `/`)."""

    async def run_turn(self, prompt: str) -> None:
        """Send `prompt` to the agent as a turn, and show it."""
