"""What the slash commands and the input line need of the REPL: a narrow interface (`Repl` is
the one implementation), so that they do not import the REPL that imports them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio
    from typing import Any

    from avatar.cli.repl.asking import Asking
    from avatar.cli.repl.notify import Notifier
    from avatar.cli.repl.paste import Pastes
    from avatar.cli.repl.screen import Screen
    from avatar.cli.repl.shell_command import ShellCommands
    from avatar.engine.engine import Engine


class ReplHost(Protocol):
    """One interactive run, as its commands and its input line see it."""

    engine: Engine
    screen: Screen
    #: The permission questions (the one waiting, if any) and the mode.
    asking: Asking
    #: What the folded pastes and pasted images in the input box stand for.
    pastes: Pastes
    #: The `!command`s, and the outputs kept for the next prompt.
    shell: ShellCommands
    #: Rings when something waits for the user in an unfocused terminal.
    notifier: Notifier

    @property
    def busy(self) -> bool:
        """True while a turn or a slow command runs."""

    def keep(self, task: asyncio.Future[Any]) -> None:
        """Hold a task started by a key until it ends (and show what it raised)."""

    async def interrupt(self) -> None:
        """Stop the running turn; say which queued lines are dropped."""

    def say(self, text: str, style: str | None = None) -> None:
        """Print a line of avatar's own between turns."""

    def offer_handoff(self) -> None:
        """Say that a handoff waits for the next prompt (Ctrl-O shows it)."""

    def show_transcript(self) -> None:
        """Ctrl-O: the transcript in a pager (a waiting handoff at its end)."""

    def toolbar(self) -> str:
        """The status line."""

    def agent_commands(self) -> list[str]:
        """The slash commands the running agent offers (names without the `/`)."""

    async def run_turn(self, prompt: str) -> None:
        """Send `prompt` to the agent as a turn, and show it."""
