"""The REPL's smaller promises, typed into the installed `avatar` in tmux (issue 33): `/provider`
completes installed agents only; Claude's configured model shows before its first turn; the
REPL, `avatar attach` and `avatar ps` show one token count (after a cancel too); Claude's
tool titles name the project's files relatively; the session picker previews the last turns
of the highlighted session; avatar's refusal words reach Gemini but never show as the user's
turn when the session is resumed."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.e2e.test_prompt_tools_screen import _main, _needs
from tests.e2e.test_status_numbers import status_line
from tests.e2e.test_terminal import AVATAR, PROMPT, TURN_DONE, repl
from tests.support.drive import avatar, backdate_gemini, talk
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.served import serving
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

MENU = r"\[y\] yes\s+\[a\] always"


def test_provider_completion_offers_the_installed_agents_only(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    # An agent of the user's config whose program is not installed here.
    config = {"providers": {"ghost": {"transport": "acp", "command": ["ghost-agent-cli"]}}}
    (agent_home.root / "avatar-config.yaml").write_text(json.dumps(config))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("/provider ", enter=False)
        term.keys("Tab")
        menu = term.wait_for(r"claude-acp")
    assert "codex" in menu and "gemini" in menu  # installed (bridges/)
    assert "ghost" not in menu and "opencode" not in menu and "goose" not in menu, menu


@pytest.mark.parametrize("opening", ["/provider claude --fresh", "/new"])
def test_claude_s_configured_model_shows_before_its_first_turn(
    agent_home: AgentHome, model_server: FakeModelServer, opening: str
) -> None:
    require_bridges("claude")
    provider = "native" if opening.startswith("/provider") else "claude"
    with repl(agent_home, "-p", provider, "repl", ANTHROPIC_MODEL="claude-haiku-4-5") as term:
        term.type(opening)
        opened = term.wait_for(r"session: \S+ \(claude, new\)(?s:.*)^claude · .*idle\s*$", 90)
    line = status_line(opened)
    assert line.startswith("claude · claude-haiku-4-5 · "), line  # not `model ?`


def test_claude_s_tool_titles_name_project_files_relatively(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    target = agent_home.workdir / "src" / "notes.txt"
    target.parent.mkdir()
    model_server.script(
        "anthropic",
        Reply.tool_call("Write", {"file_path": str(target), "content": "alpha\n"}),
        Reply.text("Written."),
    )
    with repl(agent_home, "-p", "claude", "repl", "--permission", "allow") as term:
        term.type("write the notes")
        screen = term.wait_for(r"Written\.(?s:.*)" + TURN_DONE, timeout=90)
    assert "Write: src/notes.txt" in screen, screen
    assert str(agent_home.workdir) not in screen.replace(f"{agent_home.workdir}\n", ""), screen
    assert target.read_text() == "alpha\n"


def _figures(line: str) -> str:
    """The status line's model and numbers (from the model on, without the hint at its end)."""
    parts = line.split(" · ")
    return " · ".join([parts[1], *parts[3:-1]])


@pytest.mark.parametrize(
    ("provider", "api"), [("native", "chat"), ("claude", "anthropic"), ("claude-acp", "anthropic")]
)
def test_the_repl_attach_and_ps_show_one_token_count_after_a_cancel_too(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    _needs(provider)
    model_server.script(
        api,
        Reply.text("First.").with_usage(1200, 34),
        Reply.slow_text(["word "] * 300, delay=0.1).with_usage(5600, 78),
    )
    env, cwd = avatar_env(agent_home), agent_home.workdir
    with serving(env, cwd), Terminal([AVATAR, "-p", provider, "repl"], env, cwd) as term:
        term.wait_for(PROMPT)
        term.type("one")
        first = status_line(term.wait_for(r"First\.(?s:.*)" + TURN_DONE, timeout=90))
        [live] = json.loads(avatar(env, cwd, "ps", "--json").stdout)
        with Terminal([AVATAR, "attach", live["session_id"]], env, cwd) as att:
            joined = status_line(att.wait_for(r"First\.(?s:.*)" + PROMPT, timeout=30))
            term.type("two")
            term.wait_for(r"word word word", timeout=60)
            att.wait_for(r"word word word", timeout=30)
            term.keys("C-c")
            term.wait_for(r"cancelled(?s:.*)" + PROMPT, timeout=60)
            att.wait_for(r"cancelled(?s:.*)" + PROMPT, timeout=30)
            time.sleep(1)  # (the status lines redrawn)
            here, there = status_line(term.screen()), status_line(att.screen())
            [after] = json.loads(avatar(env, cwd, "ps", "--json").stdout)
    assert "turn 1,234 tok" in first, first
    assert _figures(joined) == _figures(first), (joined, first)  # the same on attaching
    assert live["tokens"] == 1234
    assert _figures(there) == _figures(here), (there, here)  # the same after the cancel
    shown = re.search(r"turn ([\d,?]+) tok", here)
    assert shown, here
    assert str(after["tokens"] if after["tokens"] is not None else "?") == shown.group(1).replace(
        ",", ""
    ), (after, here)


def test_the_picker_previews_the_last_turns_of_the_highlighted_session(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    model_server.chat.append(Reply.text("Native answer about HERONS."))
    model_server.script("anthropic", "Claude answer about PUFFINS.")
    talk(agent_home, "native", ["tell me about herons"])
    talk(agent_home, "claude", ["tell me about puffins"])
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("/resume")
        first = term.wait_for(r"── .*(?s:.*)Claude answer about PUFFINS", timeout=30)
        assert "› tell me about puffins" in first  # the newest, previewed at once
        term.type("herons", enter=False)
        term.wait_for(r"› tell me about herons(?s:.*)Native answer about HERONS", timeout=30)
        term.keys("C-c")
        term.wait_for(PROMPT)


def test_a_refusal_reaches_gemini_but_is_no_user_turn_in_its_recap(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("gemini")
    target = agent_home.workdir / "calc.py"
    model_server.script(
        "gemini",
        Reply.tool_call("write_file", {"file_path": str(target), "content": "x = 1\n"}),
        Reply.text("Left it alone."),
        Reply.text("Going on with tabs."),
    )
    with repl(agent_home, "-p", "gemini", "repl") as term:
        term.type("write calc.py")
        term.wait_for(MENU, timeout=120)
        term.type("no, use tabs")
        term.wait_for(r"Left it alone\.(?s:.*)" + TURN_DONE, timeout=90)
        term.type("go on")
        screen = term.wait_for(r"Going on with tabs\.(?s:.*)" + TURN_DONE, timeout=90)
        prefix = status_line(screen).split(" · ")[2]
        term.type("/quit")
    sent = [m.text for m in _main(model_server, "gemini")[-1].messages() if m.role == "user"]
    assert any("no, use tabs" in text and "go on" in text for text in sent), sent  # it reached
    backdate_gemini(agent_home, "gemini", prefix)
    argv = [AVATAR, "-p", "gemini", "repl", "--resume", prefix]
    with Terminal(argv, avatar_env(agent_home), agent_home.workdir, width=110) as term:
        recap = term.wait_for(r"── earlier in this session(?s:.*)^──\s*$", timeout=120)
    assert "› go on" in recap, recap
    assert "refused" not in recap and "avatar_refusal" not in recap, recap
