"""Ctrl-G: the prompt in the user's editor (`$VISUAL`, else `$EDITOR`), as in Claude Code and
git. The box's text goes into a temporary `.md` file with every folded paste in full
(`avatar.cli.repl.paste`); what the editor saves comes back into the box (pastes left as
they were fold again), not sent: Enter sends it. An editor that exits with an error leaves
the box as it was.

The editor runs in the temporary file's directory, not the project's: an editor that reads
configuration from its working directory (vim's `exrc`, an `.editorconfig`) reads none that
an agent could have written. It runs outside the walls, as the user's own program: found
on `PATH` outside the project (`Engine.user_program`), where an agent cannot plant one.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from avatar.core.errors import UsageError


def editor_command(env: Mapping[str, str]) -> list[str]:
    """The editor to run, as an argv (`$VISUAL`, else `$EDITOR`; either may hold arguments);
    a `UsageError` when neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = env.get(name, "").strip()
        if value:
            try:
                argv = shlex.split(value)
            except ValueError as e:
                raise UsageError(f"${name} cannot be read as a command: {e}") from None
            if argv:
                return argv
    raise UsageError("Ctrl-G edits the prompt in $VISUAL or $EDITOR: set one (e.g. EDITOR=vim)")


def edit_text(
    text: str, find: Callable[[str], str | None], env: Mapping[str, str] | None = None
) -> str | None:
    """`text` as the user left it in the editor (`find`: where a program is,
    `Engine.user_program`); None when the editor failed. Blocks until the editor exits: run
    it with the terminal handed over (`run_in_terminal`)."""
    env = dict(os.environ if env is None else env)
    argv = editor_command(env)
    found = find(argv[0])
    if found is None:
        raise UsageError(f"the editor {argv[0]} is not found on PATH (outside the project)")
    argv[0] = found
    with tempfile.TemporaryDirectory(prefix="avatar-prompt-") as folder:
        path = Path(folder) / "prompt.md"
        path.write_text(text + "\n" if text and not text.endswith("\n") else text, "utf-8")
        try:
            status = subprocess.call([*argv, str(path)], cwd=folder, env=env)
        except OSError as e:
            raise UsageError(f"cannot run the editor {argv[0]}: {e.strerror or e}") from None
        if status != 0:
            return None
        edited = path.read_text("utf-8", errors="replace")
    return edited[:-1] if edited.endswith("\n") else edited
