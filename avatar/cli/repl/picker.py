"""The session picker: `/resume` with no id (and `avatar repl --resume` without one) lists this
project's sessions across providers; typing filters them (fuzzy, by title, provider or id),
Enter resumes the best match, Ctrl-C or an empty line cancels."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from avatar.cli.output.cells import clip, pad
from avatar.cli.output.table import label
from avatar.cli.repl.complete import pick
from avatar.cli.repl.glyphs import install, to_glyphs
from avatar.core.times import ago

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.formatted_text import StyleAndTextTuples

    from avatar.sessions.types import SessionInfo, Transcript


def row(s: SessionInfo) -> str:
    """One line of the picker: provider, title, age, messages."""
    title = pad(label(s), 48)
    return f"{s.provider:<11} {title} {ago(s.updated or s.created):>9} {s.messages:>4} msgs"


class _Sessions(Completer):
    def __init__(self, sessions: list[SessionInfo]) -> None:
        self.sessions = sessions

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        text = document.text
        for s in pick(text, self.sessions)[:30]:
            yield Completion(s.id, -len(text), display=to_glyphs([("", row(s))]))


HINT = "type to filter · Tab/↑↓ · Enter resumes · Ctrl-C cancels"


async def pick_session(
    sessions: list[SessionInfo], read: Callable[[SessionInfo], Transcript] | None = None
) -> SessionInfo | None:
    """Ask which session to resume (`read`: its transcript, for a preview of the highlighted
    session's last turns under the list); None when cancelled or nothing matches."""
    from prompt_toolkit import PromptSession

    from avatar.cli.repl.prompting import prompt_line

    if not sessions:
        return None
    install()  # (emoji in titles and previews in the cells a terminal gives them)
    picker: PromptSession[str] = PromptSession(
        message="resume › ",
        completer=_Sessions(sessions),
        complete_while_typing=True,
        bottom_toolbar=HINT,
    )
    if read is not None:
        picker.bottom_toolbar = _with_preview(picker, sessions, read)
    try:
        text = await prompt_line(picker, pre_run=picker.default_buffer.start_completion)
    except (KeyboardInterrupt, EOFError):
        return None
    if not text.strip():
        return None
    found = pick(text, sessions)
    return found[0] if found else None


def _with_preview(
    picker: PromptSession[str],
    sessions: list[SessionInfo],
    read: Callable[[SessionInfo], Transcript],
) -> Callable[[], StyleAndTextTuples]:
    """The picker's bottom toolbar: the hint, then the last turns of the highlighted session
    (else of the best match of what is typed)."""
    from avatar.cli.repl.preview import Previews

    by_id = {s.id: s for s in sessions}
    previews = Previews(read, lambda: picker.app.invalidate())

    def toolbar() -> StyleAndTextTuples:
        buffer = picker.default_buffer
        state = buffer.complete_state
        chosen = state.current_completion if state is not None else None
        if chosen is not None:
            shown: SessionInfo | None = by_id.get(chosen.text)
        else:
            found = pick(buffer.text, sessions)
            shown = found[0] if found else None
        if shown is None:
            return [("", HINT)]
        width = picker.app.output.get_size().columns - 1
        lines = previews.get(shown, width)
        head = clip(f"── {label(shown)}", width)
        return to_glyphs([("", "\n".join([HINT, head, *(lines if lines is not None else ["…"])]))])

    return toolbar
