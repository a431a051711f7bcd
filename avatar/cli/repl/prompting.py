"""One line read with prompt-toolkit, under avatar's own handling of the loop's errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession


async def prompt_line(session: PromptSession[str], **kwargs: Any) -> str:
    """`session.prompt_async(**kwargs)` under avatar's handling of the loop's errors
    (`avatar.cli.signals`), not prompt-toolkit's: that one prints the error and waits for
    Enter, and on a terminal that went away each failed wait was another error, for ever (an
    orphan avatar spinning a core and growing by gigabytes)."""
    return await session.prompt_async(set_exception_handler=False, **kwargs)
