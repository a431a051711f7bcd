"""The top-level `avatar --help` shipped as text: `help.txt`, what click prints at 80 columns.

Rendering that help imports click and builds the whole command tree: ~80 ms of a ~100 ms
`avatar --help`, for a text that changes only when a command or a global option does. So the
text is generated (`python -m avatar.cli.helptext` rewrites `help.txt`) and `avatar --help`
prints it when click would print exactly these bytes; in any other case click renders the help
as before. tests/core/test_help_fast.py fails if the file and the command tree drift apart.

This module is on the path of `avatar --help`: at module level it imports only `os` and `sys`
(both loaded by every interpreter), never click, `shutil` or `gettext` (~20 ms each, for `re`).
"""

from __future__ import annotations

import os
import sys

FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "help.txt")

#: The terminal width `help.txt` is rendered for. Any terminal at least this wide gets the same
#: text from click, which wraps help to at most 78 characters (see `help_width`).
COLUMNS = 80

#: The environment variable that makes click answer shell completion instead of running the
#: command (click: `_{PROG_NAME}_COMPLETE`); set, it is click's to answer.
COMPLETE_VAR = "_AVATAR_COMPLETE"


def help_width(columns: int) -> int:
    """The width click wraps help to in a terminal `columns` wide (`click.HelpFormatter`)."""
    return max(min(columns, 80) - 2, 50)


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns` (what click asks), without importing `shutil`:
    $COLUMNS if it is a positive number, else the width of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def click_may_translate() -> bool:
    """Whether click's own words ("Usage:", "Options:", "Show this message and exit.") could
    come out translated: click passes them through the standard library's `gettext` (domain
    "messages", catalogs under `sys.base_prefix`/share/locale, the language chosen by $LANGUAGE,
    $LC_ALL, $LC_MESSAGES or $LANG). True if a catalog of that domain exists for any language;
    looked for on disk, as `gettext.find` would, but without importing `gettext`."""
    localedir = os.path.join(sys.base_prefix, "share", "locale")
    try:
        languages = os.listdir(localedir)
    except OSError:  # the usual case: no such directory, so nothing to translate with
        return False
    return any(
        os.path.exists(os.path.join(localedir, language, "LC_MESSAGES", "messages.mo"))
        for language in languages
    )


def shipped_text() -> str | None:
    """The text of `help.txt` (None if it is missing, unreadable or not ASCII: only ASCII is
    written the same by every stream, whatever its encoding)."""
    try:
        with open(FILE, "rb") as f:
            return f.read().decode("ascii") or None
    except (OSError, ValueError):
        return None


def shipped_help() -> str | None:
    """The shipped `avatar --help` if it is byte for byte what click would print now, else None."""
    if help_width(terminal_columns()) != help_width(COLUMNS):
        return None
    if os.environ.get(COMPLETE_VAR) or click_may_translate():
        return None
    return shipped_text()


def print_shipped_help() -> bool:
    """Print `avatar --help` from `help.txt` and return True, or return False (printing
    nothing) when click is to render it."""
    text = shipped_help()
    if text is None or sys.stdout is None:  # no stdout: click knows what (not) to do
        return False
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away: as `avatar.cli.commands.run` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return True


def rendered(columns: int = COLUMNS) -> str:
    """What click prints for `avatar --help` with $COLUMNS set to `columns`: the help of the
    command tree in `avatar.cli.commands` and the newline `click.echo` ends it with. Imports
    click and the command tree."""
    import click

    from avatar.cli.commands import cli

    ctx = click.Context(cli, info_name="avatar", **cli.context_settings)
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(columns)  # click's own width rule reads it, as in a real run
    try:
        return cli.get_help(ctx) + "\n"
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def main() -> None:
    """Rewrite `help.txt` from the command tree."""
    text = rendered(COLUMNS)
    with open(FILE, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"wrote {FILE}")
    if not text.isascii():
        print("warning: the help is not ASCII, so `avatar --help` will render it with click")


if __name__ == "__main__":
    main()
