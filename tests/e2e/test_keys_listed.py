"""Every key the REPL binds is named where a person looks for it (issue 33): in the list `?`
shows on an empty prompt (read off the screen, in tmux at 60 columns, where no line of it
wraps) and in the README's REPL section. The
keys are the REPL's own bindings (`key_bindings`) and the ones prompt-toolkit gives it; a key
added without saying so fails here.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

from avatar.cli.repl.host import ReplHost
from avatar.cli.repl.keys import key_bindings
from avatar.cli.repl.notify import Notifier
from avatar.cli.repl.paste import Pastes
from tests.e2e.test_terminal import AVATAR, PROMPT
from tests.support.homes import AgentHome, avatar_env
from tests.support.tmux import Terminal

README = Path(__file__).parents[2] / "README.md"
#: How a binding's keys are written for a person (None: the terminal's own focus reports).
NAMES = {
    ("?",): "?",
    ("y",): "y",
    ("a",): "a",
    ("n",): "n",
    ("c-m",): "Enter",
    ("c-o",): "Ctrl-O",
    ("c-t",): "Ctrl-T",
    ("escape",): "Esc",
    ("escape", "c-m"): "Alt-Enter",
    ("escape", "escape"): "Esc Esc",
    ("s-tab",): "Shift-Tab",
    ("c-g",): "Ctrl-G",
    ("c-v",): "Ctrl-V",
    ("c-h",): "Backspace",
    ("<bracketed-paste>",): "paste",
    ("f24",): None,
}
#: prompt-toolkit's own keys the REPL keeps (history, search, clear, interrupt, leave).
OWN = ["Ctrl-R", "↑ / ↓", "Ctrl-L", "Ctrl-C", "Ctrl-D"]


def bound() -> list[str]:
    idle = SimpleNamespace(permission=None, busy=False, pastes=Pastes(), notifier=Notifier("off"))
    host = cast("ReplHost", idle)
    keys = {tuple(str(getattr(k, "value", k)) for k in b.keys) for b in key_bindings(host).bindings}
    unnamed = keys - set(NAMES)
    assert not unnamed, f"keys with no name here: {unnamed}"
    return [name for key in sorted(keys) if (name := NAMES[key]) is not None] + OWN


def test_every_key_is_in_the_question_mark_list_which_fits_60_columns(
    agent_home: AgentHome,
) -> None:
    env = avatar_env(agent_home)
    with Terminal([AVATAR, "-p", "native", "repl"], env, agent_home.workdir, width=60) as term:
        term.wait_for(PROMPT)
        term.type("?", enter=False)
        listed = term.wait_for(r"Ctrl-D\s+leave(?s:.*)\(@shot\.png an image\)")
    rows = listed[listed.index("  y / a / n") : listed.index("an image)")].splitlines()
    assert all(row.startswith("  ") for row in rows), rows  # none wrapped to the margin
    # (the single-key answers as one entry: `y / a / n`)
    named = [key for key in bound() if len(key) > 1] + ["y / a / n"]
    missing = [key for key in named if key not in listed]
    assert not missing, listed


def test_every_key_is_in_the_readmes_repl_section() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("In the REPL:")
    section = text[start : text.index("\n## ", start)]  # to the next heading
    flat = " ".join(section.split())
    missing = [
        key for key in bound() if f"`{key}`" not in flat and (len(key) == 1 or key not in flat)
    ]
    assert not missing, missing
