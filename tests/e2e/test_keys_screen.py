"""Keys as in the agents' own terminals, typed into the installed `avatar` in tmux (issue 23,
items 2, 6 and 7): the permission menu takes `y`/`a`/`n` or what to do instead (which reaches
the model), nothing typed while a command or a turn runs is lost, Esc stops a turn, and Ctrl-C
puts the queued lines back in the box (issue 33)."""

from __future__ import annotations

import re
import threading
import time

import pytest

from tests.e2e.test_terminal import AVATAR, PROMPT, TURN_DONE, TURN_END, body, repl
from tests.support.drive import talk
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Message, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

MENU = r"\[y\] yes\s+\[a\] always"


def _write(name: str) -> Reply:
    return Reply.tool_call("write", {"path": name, "content": f"{name}\n"})


def _user_texts(server: FakeModelServer) -> list[str]:
    last = server.requests_for("chat")[-1]
    return [m.text for m in last.messages() if m.role == "user"]


def test_text_typed_in_the_permission_menu_reaches_the_model_as_the_reason(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(_write("spaces.txt"), Reply.text("Understood, tabs then."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("indent the file")
        term.wait_for(MENU)
        term.type("no, use tabs")  # starts with `n`: a reason, not a deny and a prompt
        screen = term.wait_for(TURN_DONE)
        assert "the agent is told: no, use tabs" in screen
    assert not (agent_home.workdir / "spaces.txt").exists()
    result = model_server.requests_for("chat")[-1].messages()[-1]
    assert result.role == "tool" and "no, use tabs" in result.text
    assert _user_texts(model_server) == ["indent the file"]  # no prompt `o, use tabs`


def test_yes_typed_in_the_menu_allows_once_and_sends_nothing_else(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        _write("fast.txt"),
        Reply.text("fast done"),
        _write("slow.txt"),
        Reply.text("slow done"),
        Reply.text("all done"),
    )
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("first")
        term.wait_for(MENU)
        term.type("yes")  # typed at once
        term.wait_for("fast done")
        term.wait_for(TURN_DONE)
        term.type("second")
        term.wait_for("permission: write slow.txt")
        term.keys("y")  # answers alone …
        term.wait_for(r"permission: write slow\.txt(?s:.*)→ allowed")
        # … and the rest of its word, typed as a person types `yes`, is not a prompt. (Typed
        # once the next answer had come, it raced the menu's 5 s window under load.)
        term.type("es")
        term.wait_for(r"slow done(?s:.*)" + TURN_DONE)
        term.type("third")
        screen = term.wait_for(r"all done(?s:.*)" + TURN_DONE)
        assert len([line for line in body(screen) if line.startswith("─ ")]) == 3  # no `es` turn
    assert (agent_home.workdir / "fast.txt").exists() and (agent_home.workdir / "slow.txt").exists()
    assert _user_texts(model_server) == ["first", "second", "third"]


def test_text_typed_while_provider_switches_arrives_as_the_next_prompt(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    model_server.script("anthropic", "Claude heard you.")
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("/provider claude")
        term.type("typed while switching")  # the switch starts a claude process meanwhile
        screen = term.wait_for("Claude heard you.", timeout=90)
        said = term.history()  # (all of it: the screen alone may have scrolled the line away)
        # Queued while claude starts, and said so; on a loaded machine the line may come in
        # after the switch ended, and then goes at once (never refused, never lost).
        queued = re.findall(r"\(queued for after ([^:]+): typed while switching\)", said)
        assert queued in (["starting claude"], []), said
        assert "wait for the command" not in screen
    users = [
        m.text
        for r in model_server.requests_for("anthropic")
        for m in r.messages()
        if m.role == "user"
    ]
    assert any("typed while switching" in text for text in users)


def test_esc_stops_a_running_turn(agent_home: AgentHome, model_server: FakeModelServer) -> None:
    words = [f"word{i} " for i in range(60)]
    # The last word is held back for good: only the interrupt ends the turn.
    talk = Reply.text("", chunks=words).held(threading.Event())
    model_server.chat.append(talk, Reply.text("Next answer."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("talk slowly")
        term.wait_for("busy: typing steers")
        term.wait_for("word58")  # the answer streams (its last word held back)
        term.keys("Escape")
        term.wait_for(r"^─ .*cancelled", timeout=15)
        screen = term.wait_for(r"\(interrupted\)")  # (said once the cancel is through)
        assert "word59" not in screen
        term.wait_for(PROMPT)
        term.type("go on")  # the REPL is still there, and answers
        term.wait_for("Next answer.")


def test_ctrl_c_puts_a_queued_command_back_in_the_box_unrun(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    words = [f"word{i} " for i in range(60)]
    # The last word is held back for good: the turn runs until the interrupt.
    model_server.chat.append(Reply.text("", chunks=words).held(threading.Event()))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("talk slowly")
        term.wait_for("busy: typing steers")
        term.wait_for("word58")  # the answer streams (its last word held back)
        term.type("/model openai/gpt-4o-mini")  # a command waits for the turn's end
        term.wait_for(r"queued for after this turn: /model openai/gpt-4o-mini")
        term.keys("C-c")
        term.wait_for(r"\(1 queued line back in the box\)")
        term.wait_for(TURN_END)
        screen = term.wait_for(r"^› /model openai/gpt-4o-mini\s*$")  # in the box, not run
        assert "model: openai/gpt-4o-mini" not in screen


def _main_messages(server: FakeModelServer) -> list[Message]:
    return [r for r in server.requests_for("anthropic") if r.is_main][-1].messages()


def test_a_reason_typed_for_claude_code_is_the_denial_it_reads(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    target = agent_home.workdir / "made.txt"
    model_server.script(
        "anthropic",
        Reply.tool_call("Bash", {"command": f"touch {target}", "description": "make a file"}),
        Reply.text("Fine, no file."),
    )
    with repl(agent_home, "-p", "claude", "repl") as term:
        term.type("make a file")
        term.wait_for(MENU, timeout=90)
        term.type("no, use tabs")
        term.wait_for("Fine, no file.", timeout=60)
    assert not target.exists()
    # The refusal is the tool's result (newer Claude Code may add a reminder after it).
    results = [m.text for m in _main_messages(model_server)[-3:] if m.role == "tool"]
    assert any("no, use tabs" in text for text in results), results


def test_a_reason_typed_for_an_acp_agent_goes_with_the_next_prompt(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude-agent-acp")
    target = agent_home.workdir / "made.txt"
    model_server.script(
        "anthropic",
        Reply.tool_call("Bash", {"command": f"touch {target}", "description": "make a file"}),
        Reply.text("Could not make it."),
    )
    with repl(agent_home, "-p", "claude-acp", "repl") as term:
        term.type("make a file")
        term.wait_for(MENU, timeout=90)
        term.type("no, use tabs")
        term.wait_for("Could not make it.", timeout=60)
        term.wait_for(TURN_DONE)
        term.type("go on")
        term.wait_for(r"^› go on(?s:.*)" + TURN_DONE, timeout=60)
    assert not target.exists()
    users = [m.text for m in _main_messages(model_server) if m.role == "user"]
    # ACP answers a permission request with an option alone: the words open the next prompt.
    assert any("no, use tabs" in text and "go on" in text for text in users[-2:]), users


def test_keys_typed_while_the_repl_starts_wait_in_the_prompt(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("claude")
    model_server.script("anthropic", "First.", "Heard the early words.")
    sid = talk(agent_home, "claude", ["remember this"])
    argv = [AVATAR, "-p", "claude", "repl", "--resume", sid]
    with Terminal(argv, avatar_env(agent_home), agent_home.workdir, width=110) as term:
        # avatar holds the keys from its first line on, while it resumes the claude session.
        # (Keys typed before it runs at all are the terminal's own echo, which no program
        # holds: a fixed sleep here raced avatar's start under load.)
        term.wait_for(f"resuming session {sid}")
        term.type("typed early", enter=False)
        screen = term.wait_for(PROMPT.replace(r"^›\s*$", r"^› typed early\s*$"), timeout=90)
        assert screen.count("typed early") == 1  # in the prompt, not echoed over start-up
        term.keys("Enter")
        term.wait_for("Heard the early words.", timeout=60)
    users = [m.text for m in _main_messages(model_server) if m.role == "user"]
    assert "typed early" in users[-1]


LONG_THOUGHT = " ".join(f"step{i}" for i in range(40)) + " conclusion-reached"


def test_ctrl_t_shows_thinking_in_full_and_question_mark_the_shortcuts(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.thinking(LONG_THOUGHT) + Reply.text("Folded."),
        Reply.thinking(LONG_THOUGHT) + Reply.text("In full."),
    )
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("?", enter=False)
        screen = term.wait_for(r"Ctrl-T\s+thinking in full")
        prompt_lines = [ln for ln in term.screen().splitlines() if ln.startswith("›")]
        assert "Esc, Ctrl-C" in screen and not any("?" in ln for ln in prompt_lines)  # not typed
        term.type("think")
        screen = term.wait_for("Folded.")
        assert "conclusion-reached" not in screen  # one line, cut short
        term.keys("C-t")
        term.wait_for(r"\(thinking: in full\)")
        term.type("think again")
        # (at the turn's end: the answer's tail can show above the prompt before the lines
        # printed above it are flushed)
        screen = term.wait_for(r"In full\.(?s:.*)" + TURN_DONE)
        assert "conclusion-reached" in screen


def test_ctrl_d_mid_turn_asks_first_and_clear_starts_a_new_session(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    words = [f"word{i} " for i in range(60)]
    model_server.chat.append(Reply.text("One."), Reply.slow_text(words, delay=0.2))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("hello")
        first = term.wait_for(r"session: (\S+) \(native, new\)")
        term.wait_for(TURN_DONE)
        term.type("/clear")
        term.wait_gone("One.")  # a clear screen …
        screen = term.wait_for(r"session: \S+ \(native, new\)")
        new_id = re.search(r"session: (\S+)", screen).group(1)  # type: ignore[union-attr]
        assert new_id not in first  # … on a new session
        term.type("talk slowly")
        term.wait_for("busy: typing steers")
        term.keys("C-d")
        term.wait_for("a turn is running: Ctrl-D again")
        assert not term.dead()
        term.keys("C-d")
        deadline = time.monotonic() + 20
        while not term.dead() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert term.dead()


def test_ctrl_r_finds_an_earlier_prompt(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("First answer."), Reply.text("Second answer."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("alpha prompt")
        term.wait_for(TURN_DONE)
        term.keys("C-r")
        term.type("alp", enter=False)
        term.wait_for(r"i-search.*alp")
        term.keys("Enter")
        term.wait_for("Second answer.")
    assert _user_texts(model_server) == ["alpha prompt", "alpha prompt"]


def test_shift_tab_accepts_edits_without_asking_and_still_asks_the_rest(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        _write("edited.txt"),
        Reply.tool_call("bash", {"command": "touch ran.txt"}),
        Reply.text("Both tried."),
    )
    with repl(agent_home, "-p", "native", "repl") as term:
        term.keys("BTab")
        term.wait_for(r"permission mode: accept edits")
        term.type("edit, then run")
        screen = term.wait_for(MENU)
        assert "permission: write edited.txt" not in screen  # the edit was not asked
        assert "touch ran.txt" in screen  # the command is
        term.keys("n")
        term.wait_for("Both tried.")
    assert (agent_home.workdir / "edited.txt").exists()
    assert not (agent_home.workdir / "ran.txt").exists()
