"""The `/rewind` and `/resume` pickers fit a 60-column terminal (issue 33: menus that fit 60
columns): the list's heading, each turn with what it changed, and the keys below the prompt
each on one line, none cut at the margin (at 60 columns the heading wrapped, each turn's
"no file changed" went to a line of its own and both key lines lost their end)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from tests.e2e.test_terminal import PROMPT, TURN_DONE
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

AVATAR = shutil.which("avatar", path=str(Path(sys.executable).parent)) or "avatar"


def test_the_rewind_and_resume_pickers_fit_60_columns(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Herons wade at dawn."))
    model_server.chat.append(Reply.text("Puffins nest on cliffs."))
    env = avatar_env(agent_home)
    command = [AVATAR, "-p", "native", "repl"]
    with Terminal(command, env, agent_home.workdir, width=60, height=40) as term:
        term.wait_for(PROMPT)
        term.type("tell me a long story about herons in the marsh at dawn please")
        term.wait_for(TURN_DONE, timeout=60)
        term.type("and puffins on the cliffs of the northern islands")
        term.wait_for(r"cliffs\.(?s:.*)" + TURN_DONE, timeout=60)
        term.type("/rewind")
        # (the list is written above the prompt, and may come after it)
        rewind = term.wait_for(r"(?s)turns of this.*changed.*changed.*before turn ›.*cancels")
        term.keys("C-c")
        term.wait_for(PROMPT)
        term.type("/resume")
        resume = term.wait_for(r"resume ›(?s:.*)cancels")
        term.keys("C-c")
    assert re.search(r"^turns of this session \(.*turn N\)$", rewind, re.M), rewind
    rows = re.findall(r"^\s+\d+\s+just now\s+.*\S\s+no file changed$", rewind, re.M)
    assert len(rows) == 2, rewind
    assert re.search(r"^a turn's number.*Ctrl-C cancels$", rewind, re.M), rewind
    assert re.search(r"^type to filter.*Ctrl-C cancels$", resume, re.M), resume
