"""Completion in the REPL: slash commands, their arguments (providers, sessions with titles,
presets, models), and `@path` references to files of the project; plus the fuzzy match the
session picker uses."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from avatar.cli.repl.slash import COMMANDS, lookup

if TYPE_CHECKING:
    from avatar.engine.engine import Engine
    from avatar.sessions.types import SessionInfo

# Directories never offered for `@path` (they are large and never what one means).
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", "dist"}
_MAX_FILES = 5000


def fuzzy_score(query: str, text: str) -> int | None:
    """How well `query` matches `text` (higher is better), or None when it does not.

    A substring scores highest (earlier is better); otherwise the query's characters must
    appear in order, and tighter matches score higher.
    """
    q, t = query.lower(), text.lower()
    if not q:
        return 0
    at = t.find(q)
    if at >= 0:
        return 10_000 - at
    pos, gaps = -1, 0
    for ch in q:
        nxt = t.find(ch, pos + 1)
        if nxt < 0:
            return None
        gaps += nxt - pos - 1
        pos = nxt
    return 1_000 - gaps


def pick(query: str, sessions: list[SessionInfo]) -> list[SessionInfo]:
    """Sessions matching `query` by id prefix, title or provider, best first (ties: newest)."""
    query = query.strip()
    by_id = [s for s in sessions if query and s.id.startswith(query)]
    if by_id:
        return by_id
    scored = []
    for order, s in enumerate(sessions):
        score = fuzzy_score(query, f"{s.name or ''} {s.title or ''} {s.provider}")
        if score is not None:
            scored.append((-score, order, s))
    return [s for _, _, s in sorted(scored, key=lambda x: (x[0], x[1]))]


def project_files(root: Path) -> list[str]:
    """Files under `root` (relative, POSIX), skipping build and VCS directories; bounded."""
    out: list[str] = []
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        rel = Path(base).relative_to(root)
        for name in sorted(files):
            out.append((rel / name).as_posix())
            if len(out) >= _MAX_FILES:
                return out
    return out


class ReplCompleter(Completer):
    """Completes what the REPL's input line is about to need."""

    def __init__(
        self,
        engine: Engine,
        sessions: Callable[[], list[SessionInfo]],
        agent_commands: Callable[[], list[str]] = list,
    ) -> None:
        self.engine = engine
        self.sessions = sessions
        self.agent_commands = agent_commands  # the running agent's own slash commands
        self._files: list[str] | None = None

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text_before_cursor
        word = text.split(" ")[-1] if text else ""
        if word.startswith("@"):
            yield from self._paths(word[1:])
            return
        if text.startswith("/") and " " not in text:
            for c in COMMANDS:
                for name in (c.name, *c.aliases):
                    if name.startswith(text):
                        yield Completion(name, -len(text), display_meta=c.help)
            for name in self.agent_commands():
                if f"/{name}".startswith(text) and lookup(f"/{name}") is None:
                    yield Completion(f"/{name}", -len(text), display_meta="the agent's own")
            return
        if text.startswith("/"):
            command = lookup(text.split(" ", 1)[0])
            if command is not None:
                yield from self._arguments(command.name, word)

    def _arguments(self, command: str, word: str) -> Iterable[Completion]:
        if command == "/provider":  # (an agent not installed cannot be switched to)
            names = [s.name for s in self.engine.registry.installed()]
            return self._words(word, names, {})
        if command == "/preset":
            return self._words(word, list(self.engine.settings.presets), {})
        if command == "/model":
            return self._words(word, self._models(), {})
        if command in ("/resume", "/fork"):
            sessions = self.sessions()
            meta = {s.id: f"{s.provider} · {s.title or 'untitled'}" for s in sessions}
            return self._words(word, [s.id for s in sessions], meta)
        return []

    def _models(self) -> list[str]:
        engine = self.engine
        return engine.registry.models(engine.chosen_provider(), engine.settings)

    @staticmethod
    def _words(word: str, options: list[str], meta: dict[str, str]) -> Iterator[Completion]:
        for option in options:
            if option.startswith(word) or (word and fuzzy_score(word, meta.get(option, ""))):
                yield Completion(option, -len(word), display_meta=meta.get(option, ""))

    def _paths(self, partial: str) -> Iterator[Completion]:
        if self._files is None:
            self._files = project_files(self.engine.cwd)
        shown = 0
        for path in self._files:
            if fuzzy_score(partial, path) is not None:
                yield Completion(path, -len(partial))
                shown += 1
                if shown >= 50:
                    return
