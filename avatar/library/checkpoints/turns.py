"""Each session's turns and their checkpoints (docs/design.md §12):
`$AVATAR_HOME/rewind/sessions/<provider>/<id>.jsonl`, append-only, one line when a turn
starts (its number, the checkpoint before it, the project, the time, the user's first words,
masked) and one when it ends (the checkpoint after it and what it changed). A session made by
a rewind starts with the lines of the turns it kept, so it can be rewound further back.

Turns are numbered from 1 in the order avatar ran them on the session; turns an agent ran
outside avatar have no checkpoint and are not numbered here. Where a turn begins in the
conversation a provider's store kept is found by its first words (`cut_before`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from avatar.core.errors import UsageError
from avatar.core.fileio import append_line
from avatar.core.ids import check_id
from avatar.core.times import parse_time
from avatar.library.checkpoints.store import Change, store_root
from avatar.sessions.jsonl import title_from

if TYPE_CHECKING:
    from avatar.sessions.types import TranscriptMessage

#: How many changed files a turn's line keeps by name (the rest are counted).
NAMED_FILES = 50
#: How much of a turn's first words must begin a message to take it for the turn's prompt.
_KEY = 60


@dataclass
class Turn:
    """One turn of a session as recorded: its number, the checkpoints before and after it
    (None where the files could not be recorded), the project, when it started, the user's
    first words, and what it changed (`files`, and `more` not named)."""

    number: int
    before: str | None = None
    after: str | None = None
    project: str | None = None
    at: datetime | None = None
    prompt: str = ""
    files: list[Change] = field(default_factory=list)
    more: int = 0

    def summary(self) -> str:
        """What the turn changed, in a few words: `calc.py +1 -1, notes.md (new)`."""
        if self.after is None:
            return "files not recorded" if self.before is None else "files not recorded after it"
        if not self.files:
            return "no file changed"
        words = []
        for change in self.files[:3]:
            if change.status == "A":
                words.append(f"{change.path} (new)")
            elif change.status == "D":
                words.append(f"{change.path} (deleted)")
            elif change.added is None:
                words.append(f"{change.path} (binary)")
            else:
                words.append(f"{change.path} +{change.added} -{change.removed}")
        rest = len(self.files) - 3 + self.more
        return ", ".join(words) + (f" and {rest} more" if rest > 0 else "")


class TurnLog:
    """The turns of one session; see the module docstring."""

    def __init__(self, home: Path, provider: str, session_id: str) -> None:
        check_id(session_id)
        if not provider or "/" in provider or provider.startswith("."):
            raise UsageError(f"not a provider name: {provider!r}")
        self.provider, self.session_id = provider, session_id
        self.path = store_root(home) / "sessions" / provider / f"{session_id}.jsonl"

    def turns(self) -> list[Turn]:
        """The session's turns, first to last (none when it has no log)."""
        found: dict[int, Turn] = {}
        for line in self._lines():
            number = line.get("turn")
            if not isinstance(number, int) or number < 1:
                continue
            turn = found.setdefault(number, Turn(number))
            if "before" in line:
                turn.before = _text(line.get("before"))
                turn.project = _text(line.get("project"))
                turn.at = parse_time(line.get("at"))
                turn.prompt = _text(line.get("prompt")) or ""
                turn.after, turn.files, turn.more = None, [], 0
            if "after" in line:
                turn.after = _text(line.get("after"))
                turn.files = [c for f in line.get("files") or [] if (c := _change(f)) is not None]
                turn.more = int(line.get("more") or 0)
        return [found[n] for n in sorted(found)]

    def _lines(self) -> list[dict[str, Any]]:
        try:
            raw = self.path.read_bytes()
        except OSError:
            return []
        out = []
        for line in raw.splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue  # (a torn line)
            if isinstance(data, dict):
                out.append(data)
        return out

    def begin(self, before: str | None, project: Path, prompt: str) -> int:
        """A turn starts, after checkpoint `before` (None: not recorded); its number."""
        number = max((t.number for t in self.turns()), default=0) + 1
        at = datetime.now(UTC).isoformat(timespec="seconds")
        self._append(
            {"turn": number, "before": before, "project": str(project), "at": at, "prompt": prompt}
        )
        return number

    def end(self, number: int, after: str | None, files: list[Change]) -> None:
        """Turn `number` ended, its files as checkpoint `after` records them, `files` changed."""
        named = [[c.path, c.status, c.added, c.removed] for c in files[:NAMED_FILES]]
        more = max(0, len(files) - NAMED_FILES)
        self._append({"turn": number, "after": after, "files": named, "more": more})

    def inherit(self, turns: list[Turn]) -> None:
        """This session starts with `turns` (of the session it was made from)."""
        for turn in turns:
            at = turn.at.isoformat(timespec="seconds") if turn.at else None
            self._append(
                {
                    "turn": turn.number,
                    "before": turn.before,
                    "project": turn.project,
                    "at": at,
                    "prompt": turn.prompt,
                }
            )
            if turn.after is not None:
                self.end(turn.number, turn.after, turn.files)

    def _append(self, data: dict[str, Any]) -> None:
        line = json.dumps(data, ensure_ascii=False) + "\n"
        append_line(self.path, line.encode())


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _change(value: object) -> Change | None:
    if not isinstance(value, list) or len(value) != 4:
        return None
    path, status, added, removed = value
    if not isinstance(path, str) or not isinstance(status, str):
        return None
    return Change(path, status, _int(added), _int(removed))


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def prompts(messages: list[TranscriptMessage]) -> list[int]:
    """Where the user's prompts are among `messages` (not the context agents insert)."""
    from avatar.sessions.inserted import inserted_user_message

    return [
        i
        for i, m in enumerate(messages)
        if m.role == "user" and m.text.strip() and not inserted_user_message(m.text)
    ]


def cut_before(messages: list[TranscriptMessage], turns: list[Turn], number: int) -> int | None:
    """How many of `messages` come before turn `number`: the turns are matched to the
    prompts from the last back, each by its first words (a turn an agent did not keep, or
    a prompt avatar did not send, is passed over); None when it is not found."""
    places = prompts(messages)
    found: dict[int, int] = {}
    j = len(places) - 1
    for turn in reversed(turns):
        key = _said(turn.prompt)[:_KEY]
        k = j
        while k >= 0 and not _said(messages[places[k]].text).startswith(key):
            k -= 1
        if k >= 0:
            found[turn.number] = places[k]
            j = k - 1
    return found.get(number)


def _said(text: str) -> str:
    """The user's words as a turn keeps them (handed-over context out, secrets masked,
    spaces collapsed), without a cut's ellipsis."""
    return (title_from(text, 100_000) or "").removesuffix("…")
