"""`/rewind` (and Esc Esc on an empty prompt): the session's turns with what each changed, and
the files, the conversation or both restored to before the turn chosen (docs/design.md §12).
`/diff --rewind N` shows what such a rewind would undo.

At a terminal, `/rewind` alone lists the turns and asks which (Tab offers them, newest first)
and what to restore; elsewhere it lists the turns and says how to choose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from avatar.cli.output.cells import cell_width, pad
from avatar.core.times import ago

if TYPE_CHECKING:
    from avatar.cli.repl.host import ReplHost
    from avatar.engine.engine import Turn

USAGE = "usage: /rewind [N [--files | --conversation]] (N: a turn, as /rewind lists them)"
#: What to restore, by the word (or its first letter) the picker takes.
WHAT = {"both": [], "files": ["--files"], "conversation": ["--conversation"]}


#: Number and age before the words, and the gap before what changed.
_FIXED = 3 + 2 + 8 + 2 + 2


def row(turn: Turn, columns: int = 100) -> str:
    """One turn as `/rewind` lists it: number, age, the user's first words, what changed;
    the words cut so that the line fits `columns` cells (down to 12 of them)."""
    summary = turn.summary()
    width = max(12, min(44, columns - 1 - _FIXED - cell_width(summary)))
    return f"{turn.number:>3}  {ago(turn.at):>8}  {pad(turn.prompt, width)}  {summary}"


def listing(turns: list[Turn], columns: int | None = None) -> str:
    """The turns, first to last, under a line saying what choosing one does; fitted to
    `columns` (the terminal's width when not given)."""
    if columns is None:
        import shutil

        columns = shutil.get_terminal_size((100, 24)).columns
    head = "turns of this session (/rewind N: back to before turn N)"
    return "\n".join([head, *(row(t, columns) for t in turns)])


def parse(args: list[str]) -> tuple[int, bool, bool] | None:
    """(turn, files, conversation) from `/rewind`'s arguments; None when they do not parse."""
    flags = {a for a in args if a.startswith("--")}
    numbers = [a for a in args if not a.startswith("--")]
    if len(numbers) != 1 or not numbers[0].isdigit() or int(numbers[0]) < 1:
        return None
    if not flags <= {"--files", "--conversation"} or len(flags) > 1:
        return None
    return int(numbers[0]), "--conversation" not in flags, "--files" not in flags


async def rewind(repl: ReplHost, args: list[str]) -> bool:
    """`/rewind`: list the turns, or rewind to before one."""
    checkpoints = repl.engine.checkpoints
    if not args:
        if repl.engine.status().session_id is None:
            repl.say("no session yet: nothing to rewind")
            return False
        turns = checkpoints.turns()
        if not turns:
            repl.say("no turn of this session was recorded yet: nothing to rewind")
        else:
            repl.say(listing(turns))
            repl.say(USAGE, "dim")
        return False
    asked = parse(args)
    if asked is None:
        repl.say(USAGE)
        return False
    turn, files, conversation = asked
    await checkpoints.rewind(turn, files=files, conversation=conversation)  # (said as notices)
    return False


async def pick(repl: ReplHost) -> list[str] | None:
    """At a terminal, `/rewind` alone: which turn, then what to restore; the arguments that
    rewind so, or None when cancelled (Ctrl-C, an empty line) or there is nothing to pick."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import WordCompleter

    from avatar.cli.repl.glyphs import install, to_glyphs
    from avatar.cli.repl.prompting import prompt_line

    if repl.engine.status().session_id is None:
        return None
    turns = repl.engine.checkpoints.turns()
    if not turns:
        return None
    repl.say(listing(turns))
    numbers = [str(t.number) for t in reversed(turns)]
    import shutil

    columns = shutil.get_terminal_size((100, 24)).columns
    shown = {str(t.number): row(t, columns) for t in turns}
    install()  # (the menu's rows draw their emoji in the cells a terminal gives them)
    drawn = {number: to_glyphs([("", line)]) for number, line in shown.items()}
    which: PromptSession[str] = PromptSession(
        message="rewind to before turn › ",
        completer=WordCompleter(numbers, display_dict=drawn, sentence=True),
        complete_while_typing=False,  # (a menu drawn over the list above would hide it)
        bottom_toolbar="a turn's number (Tab lists them) · Enter · Ctrl-C cancels",
    )
    what: PromptSession[str] = PromptSession(
        message="restore [b]oth, [f]iles only or [c]onversation only? › ",
        bottom_toolbar="b, f or c (Enter: both) · Ctrl-C cancels",
    )
    try:
        chosen = (await prompt_line(which)).strip()
        if chosen not in shown:
            if chosen:
                repl.say(f"no turn {chosen} (/rewind lists them)")
            return None
        answer = (await prompt_line(what)).strip().lower() or "both"
    except (KeyboardInterrupt, EOFError):
        return None
    found = next((flags for word, flags in WHAT.items() if word.startswith(answer)), None)
    if found is None:
        repl.say(f"not an answer: {answer} (b, f or c)")
        return None
    return [chosen, *found]


def diff(repl: ReplHost, turn: int) -> None:
    """`/diff --rewind N`: what rewinding the files to before turn N would undo."""
    from avatar.cli.repl.diff_view import render_edit
    from avatar.core.diffs import Edit

    changes = repl.engine.checkpoints.undone(turn)
    if not changes:
        repl.say(f"nothing to undo: the files are as they were before turn {turn}")
        return
    plural = "s" if len(changes) > 1 else ""
    repl.say(f"a rewind to before turn {turn} would undo ({len(changes)} file{plural}):")
    for change in changes:
        repl.screen.print(render_edit(Edit(f"since turn {turn}", (change,))))
