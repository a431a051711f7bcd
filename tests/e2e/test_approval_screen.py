"""Approvals show what they approve (issue 33): the permission question of an edit shows its
diff, numbered with the file's lines, before anything is allowed; a new file's question shows
its content; the result then names the diff above instead of drawing it again; the answer says
what it allowed ("allowed once: an edit to calc.py"; "allowed for this session ...: file
edits"); the menu fits 60 columns; paths are relative to the project (Claude's titles and
the agents' results named absolute ones). Gemini CLI asked for an edit blind (`calc.py: def
add... => def add...`, the diff only after it was allowed, a write with no content).

The installed `avatar` in tmux at 60 columns, on the native agent, Claude Code (stream-json)
and Gemini CLI (ACP) against the fake model server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_diff_screen import CALC
from tests.e2e.test_terminal import AVATAR, TURN_DONE
from tests.integration.test_acp_permission_real import write_scope
from tests.support.homes import AgentHome, avatar_env, persistent_tmpdir, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

API = {"native": "chat", "claude": "anthropic", "claude-acp": "anthropic", "gemini": "gemini"}
MENU = r"^\s*\[y\] yes\s+\[a\] always\s+\[n\] no"
WIDTH = 60


def edits(provider: str, work: Path) -> list[Reply]:
    """An edit of calc.py's line 5, then a write of a new file, as `provider`'s tools ask."""
    calc, new = str(work / "calc.py"), str(work / "new.py")
    if provider == "native":
        change = {"path": "calc.py", "old_text": "total = a + b", "new_text": "total = a - b"}
        return [
            Reply.tool_call("edit", change),
            Reply.tool_call("write", {"path": "new.py", "content": "x = 1\ny = 2\n"}),
        ]
    if provider in ("claude", "claude-acp"):
        return [
            Reply.tool_call(
                "Edit",
                {"file_path": calc, "old_string": "total = a + b", "new_string": "total = a - b"},
            ),
            Reply.tool_call("Write", {"file_path": new, "content": "x = 1\ny = 2\n"}),
        ]
    return [
        Reply.tool_call(
            "replace",
            {
                "file_path": calc,
                "old_string": "    total = a + b",
                "new_string": "    total = a - b",
                "instruction": "subtract",
            },
        ),
        Reply.tool_call("write_file", {"file_path": new, "content": "x = 1\ny = 2\n"}),
    ]


@pytest.fixture(params=list(API))
def provider(request: pytest.FixtureRequest) -> str:
    name = str(request.param)
    if name != "native":
        require_bridges({"claude-acp": "claude-agent-acp"}.get(name, name))
    return name


def rows(screen: str, code: str) -> list[str]:
    """The numbered diff rows of `screen` that end with `code`, blanks collapsed."""
    found = [" ".join(line.split()) for line in screen.splitlines() if line.rstrip().endswith(code)]
    return [row for row in found if row.split()[0].isdigit()]


def test_an_approval_shows_the_diff_before_it_is_allowed_and_once(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    home = agent_home
    target = home.workdir / "calc.py"
    target.write_text(CALC)
    model_server.script(API[provider], *edits(provider, home.workdir), Reply.text("Done."))
    command = [AVATAR, "-p", provider, "repl"]
    with Terminal(command, avatar_env(home), home.workdir, width=WIDTH, height=60) as term:
        term.wait_for(r"^›")
        term.type("subtract, then add new.py")
        asked = term.wait_for(MENU, timeout=180)
        assert target.read_text() == CALC  # nothing is allowed yet
        # The diff of the proposed edit, with the file's line numbers, in the question.
        assert rows(asked, "total = a + b") == ["5 - total = a + b"], asked
        assert rows(asked, "total = a - b") == ["5 + total = a - b"], asked
        assert max(len(line.rstrip()) for line in asked.splitlines()) <= WIDTH
        term.keys("y")
        written = term.wait_for(r"(?s)allowed once: an edit to calc\.py.*" + MENU, timeout=180)
        assert "total = a - b" in target.read_text()
        # The new file's content is in its question; the edit's result refers to its diff.
        assert rows(written, "x = 1") == ["1 +x = 1"], written
        assert rows(written, "y = 2") == ["2 +y = 2"], written
        assert "(the diff above)" in written, written
        term.keys("a")
        term.wait_for(TURN_DONE, timeout=180)
        history = term.history()
        assert "allowed for this session, without asking again: file edits" in " ".join(
            history.split()
        ), history
        # Paths as a person reads them: relative to the project (Claude's titles named
        # absolute ones), in the questions and the result lines.
        unwrapped = "".join(line.rstrip() for line in history.splitlines())
        assert str(home.workdir) not in unwrapped, history
        # Each diff drawn once: in its question, not again with the result.
        assert len(rows(history, "total = a - b")) == 1, history
        assert len(rows(history, "x = 1")) == 1, history
        assert (home.workdir / "new.py").read_text() == "x = 1\ny = 2\n"


def test_a_refusal_is_said_in_one_line(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str
) -> None:
    """Refused with what to do instead, the question's answer is the one line that says so
    (before: the answer, `denied: …` and the failed call's `✗ … said: no, use tabs`)."""
    (agent_home.workdir / "calc.py").write_text(CALC)
    edit = edits(provider, agent_home.workdir)[0]
    model_server.script(API[provider], edit, Reply.text("Tabs it is."))
    command = [AVATAR, "-p", provider, "repl"]
    env = avatar_env(agent_home)
    with Terminal(command, env, agent_home.workdir, width=WIDTH, height=60) as term:
        term.wait_for(r"^›")
        term.type("subtract")
        term.wait_for(MENU, timeout=180)
        term.type("no, use tabs")
        term.wait_for(r"Tabs it is\.(?s:.*)" + TURN_DONE, timeout=180)
        history = term.history()
    after = history[history.index("[y] yes") :].splitlines()[1:]
    told = after[: next(i for i, line in enumerate(after) if "Tabs it is." in line)]
    assert [line.strip() for line in told] == ["→ denied; the agent is told: no, use tabs"], told
    assert agent_home.workdir.joinpath("calc.py").read_text() == CALC


def test_a_codex_patch_is_asked_with_its_diff(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """codex-acp asks for its patch ("Edit files"): the question shows the patch's diff with
    the file's line numbers before it is applied, and the result refers to it."""
    require_bridges("codex-acp")
    with persistent_tmpdir() as codex_home:
        home = AgentHome(
            tmp_path / "agent", model_server, codex_home=codex_home, codex_model="gpt-5.4"
        )
        write_scope(home)  # codex's own process outside the walls (its bubblewrap cannot run)
        target = home.workdir / "calc.py"
        target.write_text(CALC)
        patch = (
            f"*** Begin Patch\n*** Update File: {target}\n@@\n def add(a, b):\n"
            "-    total = a + b\n+    total = a - b\n*** End Patch\n"
        )
        call = Reply.tool_call("exec_command", {"cmd": f"apply_patch <<'EOF'\n{patch}EOF\n"})
        model_server.script("responses", call, Reply.text("Done."))
        command = [AVATAR, "-p", "codex", "repl"]
        with Terminal(command, avatar_env(home), home.workdir, width=WIDTH, height=60) as term:
            term.wait_for(r"^›")
            term.type("subtract")
            asked = term.wait_for(MENU, timeout=180)
            assert target.read_text() == CALC
            assert rows(asked, "total = a + b") == ["5 - total = a + b"], asked
            assert rows(asked, "total = a - b") == ["5 + total = a - b"], asked
            term.keys("y")
            history = term.wait_for(r"Done\.(?s:.*)" + TURN_DONE, timeout=180)
        assert "allowed once: an edit to calc.py" in history, history
        assert "calc.py  +1 -1  [1] (the diff above)" in history, history
        assert len(rows(history, "total = a - b")) == 1, history
        assert "total = a - b" in target.read_text()
