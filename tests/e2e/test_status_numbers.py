"""The status line's numbers and names, as a person reads them in a real terminal (tmux):
the same three figures (this turn's tokens, the session's context use, the session's cost)
mean the same thing on every provider, the model named is the one that runs, and a narrow
terminal keeps the hint of what a key does now.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.e2e.test_terminal import AVATAR, PROMPT, TURN_DONE, body, kill_agent, repl
from tests.support.drive import backdate_gemini
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

STATUS = r"(?m)^\S+ · .*"


def status_line(screen: str) -> str:
    """The status line: the screen's last non-blank line."""
    return [line for line in screen.splitlines() if line.strip()][-1]


@pytest.mark.parametrize("provider", ["native", "claude", "claude-acp"])
def test_this_turn_s_tokens_context_and_cost_mean_the_same_everywhere(
    provider: str, agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    replies = [
        Reply.text("First.").with_usage(1200, 34),
        Reply.text("Second.").with_usage(5600, 78),
    ]
    if provider == "native":
        model_server.chat.extend(replies)
    else:
        model_server.script("anthropic", *replies)
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("one")
        first = status_line(term.wait_for(r"(?s)First\..*" + TURN_DONE, timeout=90))
        term.type("two")
        second = status_line(term.wait_for(r"(?s)Second\..*" + TURN_DONE, timeout=90))
    # This turn's tokens (read and written), never the session's running total (6,912).
    assert "turn 1,234 tok" in first, first
    assert "turn 5,678 tok" in second, second
    # The session's context against the window, and its cost: a figure, or `?` when unknown.
    assert re.search(r"ctx (\d+%|\?)", second), second
    assert re.search(r"\$(\d+\.\d{4}|\?)", second), second


def cost(line: str) -> float:
    """The session's cost on a status line."""
    found = re.search(r"\$(\d+\.\d{4})", line)
    assert found, line
    return float(found.group(1))


def gone(pid: int) -> None:
    """Wait until process `pid` has exited."""
    deadline = time.monotonic() + 15
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)


def test_a_restarted_claude_keeps_the_session_s_cost(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    model_server.script(
        "anthropic",
        Reply.text("First: GANNET.").with_usage(1200, 34),
        Reply.text("Still GANNET.").with_usage(1200, 34),
    )
    with repl(agent_home, "-p", "claude", "repl") as term:
        term.type("remember GANNET")
        before = cost(status_line(term.wait_for(r"(?s)First: GANNET\..*" + TURN_DONE, 90)))
        gone(kill_agent(term))
        term.type("what was it?")
        screen = term.wait_for(r"(?s)Still GANNET\..*" + TURN_DONE, timeout=90)
        after = cost(status_line(screen))
    # The second turn cost as much again: the session's cost grew, it did not start over.
    assert after == pytest.approx(2 * before, abs=0.0002), (before, after)


def test_a_reopened_agent_prints_no_recap_after_the_new_answer(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", "First: GANNET.", "Still GANNET.")
    with repl(agent_home, "-p", "codex", "repl") as term:
        term.type("remember GANNET")
        term.wait_for(TURN_DONE, timeout=90)
        kill_agent(term)
        term.wait_for(r"avatar: codex exited unexpectedly", timeout=15)
        term.type("what was it?")
        term.wait_for(r"(?s)Still GANNET\..*" + TURN_DONE, timeout=90)
        time.sleep(1)  # (a recap would follow the turn's end)
        lines = body(term.screen())
    assert "codex had stopped" in "\n".join(lines)
    # The screen already shows the earlier turns: no recap repeats them after the answer.
    assert not any("earlier in this session" in line for line in lines), lines
    assert sum("remember GANNET" in line for line in lines) == 1, lines


def test_an_idle_status_line_is_not_redrawn(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Done."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("hello")
        term.wait_for(r"(?s)Done\..*" + TURN_DONE, timeout=60)
        time.sleep(0.5)
        idle = term.output_during(2.0)
    assert idle == b"", idle[:200]  # four redraws a second wrote the status line again and again


def test_at_60_columns_the_status_line_keeps_what_keys_do_now(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.text("Warmed up."),  # the numbers (context, tokens, cost) are known from here on
        Reply.slow_text(["working "] * 30, delay=0.1),
        Reply.tool_call("write", {"path": "notes.txt", "content": "alpha\n"}),
        Reply.text("Written."),
    )
    env = avatar_env(agent_home)
    with Terminal([AVATAR, "-p", "native", "repl"], env, agent_home.workdir, width=60) as term:
        term.wait_for(r"^›")
        term.type("warm up")
        idle = status_line(term.wait_for(r"(?s)Warmed up\..*· idle\s*$", timeout=30))
        term.type("start the task")
        busy = status_line(term.wait_for(r"busy: typing steers\s*$", timeout=30))
        term.wait_for(r"(?s)working.*─ \d+\.\ds", timeout=30)
        term.type("write the notes")
        asking = status_line(term.wait_for(r"answer: y / a / n\s*$", timeout=30))
        term.keys("y")
        term.wait_for("Written.", timeout=30)
    for line in (idle, busy, asking):
        assert len(line) <= 60, line
        assert line.startswith("native · "), line  # the less important parts went first
    assert "ctx " in idle, idle  # room for a figure when idle


def test_after_a_switch_the_status_line_names_the_new_provider_s_model(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("anthropic", Reply.text("From claude."))
    model_server.script("responses", "From codex.")
    with repl(agent_home, "-p", "claude", "-m", "claude-sonnet-4-5", "repl") as term:
        term.type("hello")
        before = status_line(term.wait_for(r"(?s)From claude\..*" + TURN_DONE, timeout=90))
        term.type("/provider codex")
        switched = status_line(term.wait_for(r"^codex · .*idle\s*$", timeout=90))
        term.type("and you?")
        after = status_line(term.wait_for(r"(?s)From codex\..*" + TURN_DONE, timeout=90))
    assert "claude-sonnet-4-5" in before, before
    for line in (switched, after):
        assert "claude" not in line, line  # the model left behind is never named for codex
        assert agent_home.codex_model in line, line  # codex's own model (its config.toml)
    assert "$?" in after, after  # codex reports no cost: unknown, not left out


def test_resumed_gemini_says_it_resumes_and_shows_only_what_was_said(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    (agent_home.workdir / "notes.txt").write_text("KESTREL notes, line one\n")
    model_server.script("gemini", "Read them.", "Still here.")
    with repl(agent_home, "-p", "gemini", "repl") as term:
        term.type("summarise @notes.txt")
        term.wait_for(TURN_DONE, timeout=90)
        prefix = status_line(term.screen()).split(" · ")[2]
        term.type("/quit")
    backdate_gemini(agent_home, "gemini", prefix)
    argv = [AVATAR, "-p", "gemini", "repl", "--resume", prefix]
    with Terminal(argv, avatar_env(agent_home), agent_home.workdir, width=110, height=40) as term:
        # Gemini takes seconds to start and reload: the screen says what it waits for.
        waiting = term.wait_for(f"resuming session {prefix}…", timeout=5)
        assert "earlier in this session" not in waiting
        screen = term.wait_for("── earlier in this session(?s:.*)" + PROMPT, timeout=90)
    lines = body(screen)
    assert "› summarise @notes.txt" in lines, lines
    assert "Read them." in lines, lines
    # Nothing injected: Gemini's own context, the attached file's content.
    assert "session_context" not in screen and "KESTREL" not in screen, screen


def test_claude_s_own_commands_are_offered_and_compact_runs_claude_s(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    model_server.script(
        "anthropic",
        Reply.text("First."),
        Reply.text("The conversation so far: a greeting."),  # claude's summary
    )
    with repl(agent_home, "-p", "claude", "repl") as term:
        term.type("hello")
        term.wait_for(r"(?s)First\..*" + TURN_DONE, timeout=90)
        term.type("/cont", enter=False)
        term.keys("Tab")
        menu = term.wait_for(r"the agent's own", timeout=10)
        term.keys("C-u")
        term.type("/compact")
        screen = term.wait_for(r"claude compacted the conversation", timeout=90)
    assert "/context" in menu, menu  # claude's own command, offered beside avatar's
    assert "avatar:" not in screen, screen  # claude's own /compact ran, no refusal


def test_native_compact_counts_like_with_like_and_updates_the_context(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    long = "The answer goes on at length about the plan. " * 120  # ~5,500 chars each
    model_server.chat.extend(
        [Reply.text(f"Answer {i}. {long}").with_usage(4000 * i, 1400) for i in range(1, 5)]
    )
    model_server.chat.append(Reply.text("Summary: four long answers about the plan."))
    with repl(agent_home, "-p", "native", "repl") as term:
        for i in range(1, 5):
            term.type(f"question {i}")
            # (each answer scrolls the last off: the turn's own token count says it is done)
            done = rf"turn {4000 * i + 1400:,} tok .*idle\s*$"
            before = status_line(term.wait_for(done, timeout=60))
        term.type("/compact")
        screen = term.wait_for(r"context compacted .*tokens.*", timeout=60)
        time.sleep(0.5)
        after = status_line(term.screen())
    said = re.search(r"~([\d,]+) → ~([\d,]+) tokens \(estimated\)", screen)
    assert said, screen  # both counts estimated alike, and said so
    assert int(said.group(1).replace(",", "")) > int(said.group(2).replace(",", ""))
    ctx = [int(re.search(r"ctx (\d+)%", line).group(1)) for line in (before, after)]  # type: ignore[union-attr]
    assert ctx[1] < ctx[0], (before, after)  # the status line follows the compaction


def test_before_the_first_prompt_the_status_line_names_the_configured_model(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", "Here.")
    # codex: the model of its config.toml; claude: ANTHROPIC_MODEL, which Claude Code runs.
    with repl(agent_home, "-p", "codex", "repl") as term:
        first = status_line(term.screen())
        term.type("hello")
        answered = status_line(term.wait_for(r"(?s)Here\..*" + TURN_DONE, timeout=90))
    with repl(agent_home, "-p", "claude", "repl", ANTHROPIC_MODEL="claude-haiku-4-5") as term:
        claude = status_line(term.screen())
    assert first.startswith(f"codex · {agent_home.codex_model} · no session yet"), first
    assert f"codex · {agent_home.codex_model} · " in answered, answered  # what then ran
    assert claude.startswith("claude · claude-haiku-4-5 · no session yet"), claude
