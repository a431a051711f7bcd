"""`!command` and Ctrl-O, typed into the installed `avatar` in tmux (issue 33): a shell command
runs inside the walls and its output goes with the next prompt when the user says `y` (not
with `n`), kept out of the recap; Ctrl-O opens the transcript in a pager with each tool's
whole output and the thinking in full — on the native agent, Claude Code (stream-json) and
claude-agent-acp (ACP)."""

from __future__ import annotations

import re

import pytest

from tests.e2e.test_prompt_tools_screen import AGENTS, _main, _needs, _users
from tests.e2e.test_terminal import AVATAR, PROMPT, TURN_DONE, repl
from tests.support.drive import talk
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

QUESTION = r"add this output to your next prompt\? \[y/n\] ›"


def test_a_shell_command_runs_inside_the_walls_and_its_output_is_offered(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    outside = agent_home.home / "escaped.txt"
    model_server.chat.append(Reply.text("Saw the listing."), Reply.text("Nothing added."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type(f"!printf 'alpha\\nbeta\\n'; echo key=$OPENAI_API_KEY; touch {outside}")
        screen = term.wait_for(r"^─ exit 1(?s:.*)" + QUESTION)
        assert re.search(r"^alpha\n\s*beta\n\s*key=\s*$", screen, re.M), screen
        # (the refusal's words may wrap at the screen's edge after a long path)
        assert re.search(r"Permission\s+denied|Read-only\s+file\s+system", screen), screen
        term.keys("y")
        term.wait_for(r"goes with your next prompt")
        term.type("use the listing")
        term.wait_for(r"Saw the listing\.(?s:.*)" + TURN_DONE)
        term.type("!echo do-not-send")
        term.wait_for(QUESTION)
        term.keys("n")
        term.wait_for(r"\(not added\)")
        term.type("and now")
        term.wait_for(r"Nothing added\.(?s:.*)" + TURN_DONE)
        sid = re.search(r"session: (\S+) \(native", term.screen()).group(1)  # type: ignore[union-attr]
    assert not outside.exists()  # the walls held the command
    last = _main(model_server, "chat")[-1]
    first, second = [m.text for m in last.messages() if m.role == "user"]
    assert "<shell_output" in first and "alpha\nbeta" in first and first.endswith("use the listing")
    assert "do-not-send" not in second and second == "and now"
    argv = [AVATAR, "-p", "native", "repl", "--resume", sid]
    with Terminal(argv, avatar_env(agent_home), agent_home.workdir, width=110) as term:
        recap = term.wait_for(r"── earlier in this session(?s:.*)" + PROMPT, timeout=60)
    assert "› use the listing" in recap and "shell_output" not in recap, recap


@pytest.mark.parametrize(("provider", "api"), AGENTS[1:])
def test_a_shell_command_s_output_reaches_an_agent_with_the_next_prompt(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    _needs(provider)
    model_server.script(api, Reply.text("Saw the listing."))
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("!echo ORIOLE-FEATHER")
        term.wait_for(QUESTION)
        term.keys("y")
        term.wait_for(r"goes with your next prompt")
        term.type("use the listing")
        term.wait_for(r"Saw the listing\.(?s:.*)" + TURN_DONE, timeout=90)
    sent = [text for text in _users(model_server, api) if "use the listing" in text]
    assert sent and "ORIOLE-FEATHER" in sent[-1] and "<shell_output" in sent[-1], sent


LONG_THOUGHT = " ".join(f"step{i}" for i in range(40)) + " conclusion-reached"


def _counting(provider: str) -> Reply:
    if provider == "native":
        return Reply.tool_call("bash", {"command": "seq 1 40"})
    return Reply.tool_call("Bash", {"command": "seq 1 40", "description": "count"})


@pytest.mark.parametrize(("provider", "api"), AGENTS)
def test_ctrl_o_shows_every_tool_s_whole_output_and_the_thinking_in_a_pager(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    _needs(provider)
    model_server.script(
        api,
        Reply.thinking(LONG_THOUGHT) + _counting(provider),
        Reply.text("Counted to forty."),
    )
    with repl(agent_home, "-p", provider, "repl", "--permission", "allow") as term:
        term.type("count")
        screen = term.wait_for(r"Counted to forty\.(?s:.*)" + TURN_DONE, timeout=90)
        assert "conclusion-reached" not in screen  # folded on the screen …
        assert not re.search(r"^\s*40\s*$", screen, re.M)  # … and the output summed up
        term.keys("C-o")
        pager = term.wait_for(r"^──────── turn 1 ")
        assert "conclusion-reached" in pager  # the thinking in full
        term.keys("G")  # the pager's end
        end = term.wait_for(r"^\s+40\s*$(?s:.*)Counted to forty\.")
        assert re.search(r"^\s+39\s*$", end, re.M)  # the whole output, line by line
        term.keys("q")
        term.wait_for(PROMPT)
    assert _main(model_server, api)


@pytest.mark.parametrize(("provider", "api"), AGENTS)
def test_cost_shows_this_session_and_today_per_provider(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    _needs(provider)
    model_server.chat.append(Reply.text("Earlier, elsewhere.").with_usage(100, 11))
    talk(agent_home, "native", ["an earlier session today"])
    model_server.script(
        api, Reply.text("First.").with_usage(1200, 34), Reply.text("Second.").with_usage(5600, 78)
    )
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("one")
        term.wait_for(r"First\.(?s:.*)" + TURN_DONE, timeout=90)
        term.type("two")
        screen = term.wait_for(r"Second\.(?s:.*)" + TURN_DONE, timeout=90)
        session_cost = re.findall(r" · \$(\d+\.\d{4}) · ", screen)
        term.type("/cost")
        report = term.wait_for(r"today, from avatar's records:(?s:.*)" + PROMPT)
    # This session: its two turns, their tokens (as each turn's end line said) and cost.
    mine = re.search(
        r"this session \("
        + re.escape(provider)
        + r" \S+\): 2 turns · 6,912 tokens · \$(\d+\.\d{4})",
        report,
    )
    assert mine, report
    assert session_cost and mine.group(1) == session_cost[-1], (report, session_cost)
    rows = {line.split()[0]: line.split() for line in report.splitlines() if line.startswith("  ")}
    if provider == "native":  # (with the earlier session)
        assert rows["native"][1:4] == ["2", "3", "7,023"], report
    else:
        assert rows[provider][1:4] == ["1", "2", "6,912"], report
        assert rows["native"][1:4] == ["1", "1", "111"], report
        assert rows["all"][1:4] == ["2", "3", "7,023"], report
