"""Every agent's edits as numbered, coloured diffs (issue 23, item 5): the installed `avatar`
REPL in a real terminal (tmux), the real claude-agent-acp, codex-acp, Gemini CLI and the native
agent against the fake model server, the screen read back as a person sees it.

The numbers are the file's lines (not the snippet's), the code is highlighted for the file's
language on a red or green ground, `/diff` right after an edit shows it, `/diff N` one edit.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_terminal import TURN_DONE, body, repl
from tests.integration.test_acp_permission_real import write_scope
from tests.support.homes import AgentHome, persistent_tmpdir, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CALC = "import os\n\n\ndef add(a, b):\n    total = a + b\n    return total\n\n\nprint(add(1, 2))\n"
GROUND = re.compile(r"\x1b\[[0-9;]*48;5;\d+")  # a 256-colour background
COLOUR = re.compile(r"\x1b\[[0-9;]*38;5;(\d+)")  # a 256-colour foreground


def _rows(lines: list[str], code: str) -> list[str]:
    return [line.strip() for line in lines if line.rstrip().endswith(code)]


def test_a_claude_acp_edit_shows_a_numbered_coloured_diff(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude-agent-acp")
    target = agent_home.workdir / "calc.py"
    target.write_text(CALC)
    edit = {"file_path": str(target), "old_string": "total = a + b", "new_string": "total = a - b"}
    model_server.script(
        "anthropic",
        Reply.tool_call("Read", {"file_path": str(target)}),
        Reply.tool_call("Edit", edit),
        Reply.text("Subtracted now."),
    )
    with repl(agent_home, "-p", "claude-acp", "repl", "--permission", "allow") as term:
        term.type("make add subtract")
        lines = body(term.wait_for(TURN_DONE, timeout=120))
        assert "total = a - b" in target.read_text()
        # Line 5 of the file (the snippet's own first line would be 1), old and new.
        assert _rows(lines, "total = a + b") == ["5 -    total = a + b"], lines
        assert _rows(lines, "total = a - b") == ["5 +    total = a - b"]
        assert "6      return total" in [line.strip() for line in lines]  # context, numbered
        assert any(line.strip().startswith("calc.py  +1 -1  [1]") for line in lines)
        plain, coloured = term.screen().splitlines(), term.screen(colours=True).splitlines()
        removed = coloured[next(i for i, x in enumerate(plain) if x.endswith("total = a + b"))]
        added = coloured[next(i for i, x in enumerate(plain) if x.endswith("total = a - b"))]
        assert GROUND.search(removed) and GROUND.search(added)  # red and green grounds
        assert GROUND.search(removed).group() != GROUND.search(added).group()  # type: ignore[union-attr]
        assert len(set(COLOUR.findall(added))) >= 2  # highlighted: tokens in several colours

        term.type("/diff")  # right after the edit: it is there
        lines = body(term.wait_for(r"(?s)/diff.*calc\.py  \+1 -1  \[1\].*\n›", timeout=20))
        after = lines[max(i for i, line in enumerate(lines) if line.endswith("/diff")) :]
        assert "5 +    total = a - b" in [line.strip() for line in after]


def test_diff_n_shows_one_edit_and_diff_all_of_them(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    work = agent_home.workdir
    (work / "calc.py").write_text(CALC)
    model_server.chat.append(
        Reply.tool_call(
            "edit", {"path": "calc.py", "old_text": "print(add(1, 2))", "new_text": "print(3)"}
        ),
        Reply.tool_call("write", {"path": "notes.md", "content": "# Notes\n\nfirst\n"}),
        Reply.text("Two edits."),
    )
    with repl(agent_home, "-p", "native", "repl", "--permission", "allow") as term:
        term.type("edit twice")
        term.wait_for(TURN_DONE)
        term.type("/diff 1")
        lines = body(term.wait_for(r"(?s)/diff 1\n.*\n›\s*$"))
        shown = [
            line.strip()
            for line in lines[max(i for i, x in enumerate(lines) if x.endswith("/diff 1")) :]
        ]
        assert "calc.py  +1 -1  [1]" in shown
        assert "9 -print(add(1, 2))" in shown and "9 +print(3)" in shown  # the file's line 9
        assert not any("notes.md" in line for line in shown)  # edit 2 is not shown
        term.type("/diff 3")
        term.wait_for(r"no edit 3: this session has 2")
        term.type("/diff")
        lines = body(term.wait_for(r"(?s)^› /diff\s*$.*notes\.md  \+3 -0  \[2\].*\n›"))
        shown = [
            line.strip()
            for line in lines[max(i for i, x in enumerate(lines) if x.rstrip().endswith("/diff")) :]
        ]
        assert "calc.py  +1 -1  [1]" in shown and "1 +# Notes" in shown


def _shows_the_calc_diff(term: Terminal, target: Path) -> None:
    """The edit of line 5 of calc.py, numbered by the file's lines and coloured, then again
    under `/diff`."""
    lines = body(term.wait_for(TURN_DONE, timeout=120))
    assert "total = a - b" in target.read_text()
    assert _rows(lines, "total = a + b") == ["5 -    total = a + b"], lines
    assert _rows(lines, "total = a - b") == ["5 +    total = a - b"], lines
    assert any(line.strip().startswith("calc.py  +1 -1  [1]") for line in lines), lines
    plain, coloured = term.screen().splitlines(), term.screen(colours=True).splitlines()
    removed = coloured[next(i for i, x in enumerate(plain) if x.endswith("total = a + b"))]
    added = coloured[next(i for i, x in enumerate(plain) if x.endswith("total = a - b"))]
    assert GROUND.search(removed) and GROUND.search(added)
    assert len(set(COLOUR.findall(added))) >= 2
    term.type("/diff")
    lines = body(term.wait_for(r"(?s)/diff.*calc\.py  \+1 -1  \[1\].*\n›", timeout=20))
    after = lines[max(i for i, line in enumerate(lines) if line.endswith("/diff")) :]
    assert "5 +    total = a - b" in [line.strip() for line in after]


def test_a_codex_edit_shows_a_numbered_coloured_diff(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    with persistent_tmpdir() as codex_home:  # codex runs its tools only off /tmp
        home = AgentHome(
            tmp_path / "agent", model_server, codex_home=codex_home, codex_model="gpt-5.4"
        )
        write_scope(home)
        target = home.workdir / "calc.py"
        target.write_text(CALC)
        patch = (
            f"*** Begin Patch\n*** Update File: {target}\n@@\n def add(a, b):\n"
            "-    total = a + b\n+    total = a - b\n*** End Patch\n"
        )
        model_server.script(
            "responses",
            Reply.tool_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"}),
            Reply.text("Subtracted now."),
        )
        with repl(home, "-p", "codex", "repl", "--permission", "allow") as term:
            term.type("make add subtract")
            _shows_the_calc_diff(term, target)


def test_a_gemini_edit_shows_a_numbered_coloured_diff(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("gemini")
    target = agent_home.workdir / "calc.py"
    target.write_text(CALC)
    edit = {
        "file_path": str(target),
        "old_string": "    total = a + b",
        "new_string": "    total = a - b",
        "instruction": "make add subtract",
    }
    model_server.script("gemini", Reply.tool_call("replace", edit), Reply.text("Subtracted now."))
    with repl(agent_home, "-p", "gemini", "repl", "--permission", "allow") as term:
        term.type("make add subtract")
        _shows_the_calc_diff(term, target)
        # Gemini announces the call only by asking: the line names it by its question.
        screen = term.screen()
        assert "✓ calc.py:     total = a + b =>     total = a - b" in screen
        assert "replace__" not in screen  # never by its call id
