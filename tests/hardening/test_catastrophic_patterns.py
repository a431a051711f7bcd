"""Patterns a model sends can be catastrophic for a backtracking engine: `(a+)+$b` on a line of
many `a`s, the glob `*a*a*a*a*a*a*a*b` on long names. grep's regex is bounded by a timeout
(and gives the model an error it can act on), globs match in linear time, and Ctrl-C ends a
turn whose tool is busy in such a match: the tool ends "interrupted", not at the match's timeout.
How fast each grows with its input is `python -m benchmarks --only linear`."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from avatar.native.tools.find import FindTool
from avatar.native.tools.grep import GrepTool
from avatar.policy.patterns import glob_match
from tests.native.test_tools import make_ctx
from tests.support.drive import avatar, start
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply

pytestmark = pytest.mark.timeout(60)

EVIL_REGEX = "(a+)+$b"
EVIL_GLOB = "*a*a*a*a*a*a*a*b"


async def test_a_catastrophic_regex_is_stopped_and_the_model_told(tmp_path: Path) -> None:
    (tmp_path / "as.txt").write_text("a" * 5000 + "\n")
    (tmp_path / "ok.txt").write_text("fine\n")
    result = await GrepTool()({"pattern": EVIL_REGEX}, make_ctx(tmp_path))
    # Stopped by its timeout (a match that ended on its own would be no error).
    assert result.is_error and "as.txt" in result.output and "simplify" in result.output
    fine = await GrepTool()({"pattern": "f(i+)+ne"}, make_ctx(tmp_path))
    assert fine.output == "ok.txt:1: fine"


async def test_a_catastrophic_glob_matches_in_linear_time(tmp_path: Path) -> None:
    names = ["a" * 200 + str(n) for n in range(20)] + ["a" * 100 + "b"]
    for name in names:
        (tmp_path / name).write_text("a\n")
    found = await FindTool()({"pattern": EVIL_GLOB}, make_ctx(tmp_path))
    assert found.output == "a" * 100 + "b"
    grep = await GrepTool()({"pattern": "a", "glob": EVIL_GLOB}, make_ctx(tmp_path))
    assert grep.output == "a" * 100 + "b:1: a"  # (it took hours; its growth: benchmarks)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*a*b", "xaxb", True),
        ("*a*b", "xaxbx", False),
        ("*a*b*", "ab", True),
        ("a*b*c", "abcbc", True),
        ("*ab", "aab", True),
        ("*a?c", "xabcabc", True),
        ("***.py", "x.py", True),
        ("x*[0-9]", "xa1", True),
        ("x*[!0-9]", "xa1", False),
        ("src/**/*.py", "src/a/b/c.py", True),
        ("src/**/*.py", "src/c.py", True),
        ("src/**/*.py", "lib/src/c.py", False),
        ("**/b*c/d", "a/bcxc/d", True),
        ("a/**/b/**/c", "a/x/b/y/b/z/c", True),
        ("a/**/b/**/c", "a/x/c", False),
        ("src/**", "src/x/y", True),
        ("src/**", "src", True),
        ("*.py", "d/a.py", False),
        ("\\*x", "*x", True),
        ("\\*x", "ax", False),
    ],
)
def test_globs_keep_their_meaning(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_ctrl_c_ends_a_turn_whose_tool_is_stuck_in_a_match(
    avatar_env: dict[str, str], agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    project = agent_home.workdir
    (project / "as.txt").write_text("a" * 5000 + "\n")  # `re`: never ends; `regex`: 2 s
    model_server.chat.append(Reply.tool_call("grep", {"pattern": EVIL_REGEX}), Reply.text("x"))
    proc = start(avatar_env, project, "-p", "native", "chat", "search")
    try:
        assert proc.stderr is not None
        while not (line := proc.stderr.readline()).startswith("tool: "):
            assert line, "avatar ended before the tool started"
        time.sleep(0.3)  # the match is under way (its timeout is 2 s)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        assert proc.returncode == 130
    finally:
        proc.kill()
        proc.communicate()
    _interrupted_not_timed_out(avatar_env, project)


def _interrupted_not_timed_out(env: dict[str, str], project: Path) -> None:
    """The session's grep ended by the interrupt, not by the match's own 2 s timeout (which
    would say the pattern ran too long: an interrupt held up until then)."""
    [listed] = json.loads(avatar(env, project, "session", "list", "--json").stdout)
    shown = avatar(env, project, "session", "show", listed["id"]).stdout
    assert "interrupted by the user before it finished" in shown, shown
    assert "without finishing" not in shown


@pytest.mark.integration
def test_ctrl_c_in_the_repl_ends_a_turn_stuck_in_a_match(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    from tests.e2e.test_terminal import repl

    (agent_home.workdir / "as.txt").write_text("a" * 5000 + "\n")
    model_server.chat.append(Reply.tool_call("grep", {"pattern": EVIL_REGEX}), Reply.text("x"))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("search")
        term.wait_for("running grep")  # the status line, once the tool has run a moment
        term.keys("C-c")
        term.wait_for(r"\(interrupted\)", timeout=30)
    _interrupted_not_timed_out(avatar_env(agent_home), agent_home.workdir)
