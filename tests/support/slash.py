"""The REPL as its slash commands see it (`avatar.cli.repl.host.ReplHost`), without a terminal:
an engine (or a stand-in for one) and the lines said."""

from __future__ import annotations

from typing import Any


class SlashRepl:
    """What the slash handlers use of the REPL: its engine and `say` (kept in `lines`)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.lines: list[str] = []

    def say(self, text: str, style: str | None = None) -> None:
        self.lines.append(text)
