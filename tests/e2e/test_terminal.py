"""The REPL as a person sees it: the installed `avatar` in a real terminal (tmux), its screen
read back with `capture-pane`, against the fake model server and the real agent CLIs.

Every assertion is about the captured screen (with its colours where colour is the point):
what is on it after a turn, where the prompt is, what the status line says.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.drive import backdate_gemini
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.tmux import Terminal

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

AVATAR = str(Path(sys.executable).parent / "avatar")
TURN_END = r"^─ \d+\.\ds"
# An empty prompt line with the status line drawn below it: the screen as it settles after a
# write above the prompt (prompt-toolkit erases both, writes, then draws them again).
PROMPT = r"^›\s*$(?s:.*)^\S+ · "
#: The status line's start: the provider, then its other fields after " · ".
STATUS_LINE = re.compile(r"\S+ · ")
# The turn's end line and, below it, the fresh prompt (drawn a moment after that line).
TURN_DONE = TURN_END + r"(?s:.*)" + PROMPT


def repl(home: AgentHome, *args: str, **env: str) -> Terminal:
    term = Terminal([AVATAR, *args], avatar_env(home, **env), home.workdir, width=110, height=40)
    term.wait_for(PROMPT)
    return term


def kill_agent(term: Terminal) -> int:
    """SIGKILL the REPL's agent and its helpers (as an OOM kill would), found by `/status`'s
    pid line; its pid."""
    term.type("/status")
    found = re.search(r"^pid: (\d+)", term.wait_for(r"^pid: \d+"), re.M)
    assert found
    pid = int(found.group(1))
    os.killpg(os.getpgid(pid), signal.SIGKILL)
    return pid


def body(screen: str) -> list[str]:
    """The screen's lines above the status line, trailing blanks dropped. (All of them when
    the screen was read while prompt-toolkit had the prompt and status line erased, to write
    above them: the last line is then what was written, not the status line.)"""
    lines = screen.rstrip("\n").splitlines()
    if lines and STATUS_LINE.match(lines[-1]):
        lines.pop()
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def test_a_turn_renders_markdown_code_and_a_fresh_prompt(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.text("Here is **the** fix:\n\n```python\ndef inc(x):\n    return x + 1\n```\n\nDone.")
    )
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("fix it")
        screen = term.wait_for(TURN_DONE)
        lines = body(screen)
        assert lines[-1].strip() == "›"  # a fresh, empty prompt line after the turn
        assert "Here is the fix:" in lines  # markdown: the asterisks are styling, not text
        assert not any(line.startswith("›") for line in lines[:-1] if "fix it" not in line)
        coloured = term.screen(colours=True)
        code_line = next(line for line in coloured.splitlines() if "inc" in line)
        assert "\x1b[38;5;" in code_line  # the code block is highlighted
        assert "Done." in lines


def test_a_write_shows_one_status_line_and_a_diff(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.tool_call("write", {"path": "notes.txt", "content": "alpha\nbeta\n"}),
        Reply.text("Wrote it."),
    )
    with repl(agent_home, "-p", "native", "repl", "--permission", "allow") as term:
        term.type("write notes")
        lines = body(term.wait_for(TURN_END))
        tool_lines = [line for line in lines if "write notes.txt" in line]
        assert len(tool_lines) == 1 and tool_lines[0].startswith("✓ write notes.txt")
        at = lines.index(tool_lines[0])
        assert [line.strip() for line in lines[at + 1 : at + 4]] == [
            "notes.txt  +2 -0  [1]",  # the edit's number, for `/diff 1`
            "1 +alpha",
            "2 +beta",
        ]
        assert (agent_home.workdir / "notes.txt").read_text() == "alpha\nbeta\n"


def test_the_spinner_shows_while_the_model_is_silent_and_goes_after(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Finally here.").with_delay(0.0, latency=3.0))
    with repl(agent_home, "-p", "native", "repl") as term:
        # The status line is drawn with the prompt; on a loaded machine a moment after it.
        before = term.wait_for(r"no session yet").splitlines()[-1]
        assert before.startswith("native · ") and "no session yet" in before  # who will answer
        term.type("take your time")
        status = term.wait_for(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for the model… \d+s", timeout=10)
        assert "busy: typing steers" in status.splitlines()[-1]
        term.wait_for(TURN_END)
        last = term.wait_for(r"idle\s*$").splitlines()[-1]
        assert "waiting" not in last and "openai/gpt-4o" in last  # the model in use


def test_permission_menu_once_always_deny_by_keyboard(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    def write(name: str) -> Reply:
        return Reply.tool_call("write", {"path": name, "content": f"{name}\n"})

    model_server.chat.append(
        write("once.txt"),
        Reply.text("one done"),
        write("always1.txt"),
        Reply.text("two done"),
        write("always2.txt"),
        Reply.text("three done"),
        write("denied.txt"),
        Reply.text("four done"),
    )
    work = agent_home.workdir
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("first")
        screen = term.wait_for(r"\[y\] yes\s+\[a\] always")
        assert "permission: write once.txt" in screen and "+once.txt" in screen  # the diff
        term.keys("y")
        term.wait_for("one done")
        term.type("second")
        term.wait_for("permission: write always1.txt")
        term.keys("a")
        term.wait_for("two done")
        term.type("third")  # the same kind of action: not asked again this session
        screen = term.wait_for("three done")
        assert "permission: write always2.txt" not in screen
        term.type("/new")
        term.wait_for(r"\(native, new\)")
        term.type("fourth")  # a new session asks again
        term.wait_for("permission: write denied.txt")
        term.keys("n")
        term.wait_for("four done")
    assert (work / "once.txt").exists() and (work / "always2.txt").exists()
    assert not (work / "denied.txt").exists()
    denial = model_server.requests_for("chat")[-1].messages()[-1]
    assert denial.role == "tool" and "denied" in denial.text.lower()


def test_resume_shows_where_the_session_was(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Remembered: OSPREY."))
    first = subprocess.run(
        [AVATAR, "-p", "native", "chat", "remember OSPREY"],
        env=avatar_env(agent_home),
        cwd=agent_home.workdir,
        capture_output=True,
        text=True,
        timeout=60,
    )
    sid = re.search(r"session: (\S+)", first.stderr).group(1)  # type: ignore[union-attr]
    with repl(agent_home, "repl", "--resume", sid[:10]) as term:
        lines = body(term.screen())
        assert "› remember OSPREY" in lines and "Remembered: OSPREY." in lines
        assert lines[-1].strip() == "›"


@pytest.mark.parametrize(
    ("provider", "api"), [("codex", "responses"), ("claude", "anthropic"), ("gemini", "gemini")]
)
def test_an_agent_turn_and_its_resume_on_screen(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    require_bridges()
    model_server.script(api, "The word is HERON.", "Still HERON.")
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("say the word")
        lines = body(term.wait_for(TURN_DONE, timeout=90))
        assert "The word is HERON." in lines and lines[-1].strip() == "›"
        status = term.screen().splitlines()[-1].split(" · ")
        assert status[0] == provider, status
        prefix = status[2]  # provider · model · session id · …
        term.type("/quit")
    backdate_gemini(agent_home, provider, prefix)  # its files are found by an id prefix too
    with repl(agent_home, "-p", provider, "repl", "--resume", prefix) as term:
        lines = body(term.wait_for("── earlier in this session(?s:.*)" + PROMPT, timeout=90))
        assert "› say the word" in lines and "The word is HERON." in lines
        term.type("again?")
        term.wait_for("Still HERON.", timeout=90)
    assert "say the word" in model_server.requests_for(api)[-1].all_text()


def test_the_picker_resumes_another_provider_s_session(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Noted the kingfisher."), Reply.text("Back again."))
    env = avatar_env(agent_home)
    subprocess.run(
        [AVATAR, "-p", "native", "chat", "kingfisher migration notes"],
        env=env,
        cwd=agent_home.workdir,
        capture_output=True,
        timeout=60,
        check=True,
    )
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("/resume")
        term.wait_for(r"^resume ›")
        screen = term.wait_for("kingfisher migration notes")
        assert re.search(r"native\s+kingfisher migration notes\s+\S+ ago|just now", screen)
        term.type("kingfish")
        lines = body(term.wait_for(r"^── earlier in this session(?s:.*)" + PROMPT))
        assert "› kingfisher migration notes" in lines  # where it was
        term.type("and now?")
        term.wait_for("Back again.")
    assert "kingfisher migration notes" in model_server.requests_for("chat")[-1].all_text()


def test_a_killed_agent_is_one_line_and_the_next_prompt_reopens_it(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", "First: GANNET.", "Still GANNET.")
    with repl(agent_home, "-p", "codex", "repl") as term:
        term.type("remember GANNET")
        term.wait_for(TURN_END, timeout=90)
        kill_agent(term)
        # Read once the prompt is drawn again below the line: the screen as it settles.
        screen = term.wait_for(r"avatar: codex exited unexpectedly(?s:.*)" + PROMPT, timeout=15)
        errors = [line for line in body(screen) if line.startswith("avatar: ")]
        assert len(errors) == 1 and "SIGKILL" in errors[0]
        term.type("what was it?")
        term.wait_for("Still GANNET.", timeout=90)
        assert "codex had stopped" in term.screen()
    assert "remember GANNET" in model_server.requests_for("responses")[-1].all_text()


def test_an_unknown_provider_is_one_line_before_any_prompt(agent_home: AgentHome) -> None:
    # Through a shell that stays, so the screen can be read after avatar has exited.
    script = f"{AVATAR} -p codx; echo exit=$?; sleep 30"
    with Terminal(["sh", "-c", script], avatar_env(agent_home), agent_home.workdir) as term:
        screen = term.wait_for(r"^exit=\d")
        lines = [line for line in screen.splitlines() if line.strip()]
        assert (
            lines[0]
            == "avatar: unknown provider 'codx' (did you mean codex? `avatar providers` lists them)"
        )
        assert lines[1] == "exit=2"  # one line, and no prompt ever drawn


def test_a_steered_answer_starts_on_its_own_line(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.slow_text(["working ", "on ", "it "] * 30, delay=0.1),
        Reply.text("Using tabs now."),
    )
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("start the task")
        term.wait_for("busy: typing steers")  # (said once the session is open)
        term.wait_for("working on it")  # (the answer streams: its next call will read this)
        term.type("use tabs")
        lines = body(term.wait_for(TURN_END, timeout=60))
        assert "› use tabs" in lines
        # On its own line, not glued to the first answer.
        assert "Using tabs now." in lines, "\n".join(lines)


def test_compact_on_a_short_session_says_so_once(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("Short answer."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("hello")
        term.wait_for(TURN_END)
        term.type("/compact")
        screen = term.wait_for("nothing to compact")
        assert screen.count("nothing to compact") == 1 and "compacted" not in screen
    assert len(model_server.requests_for("chat")) == 1  # no summary request was made


def _processes_in(directory: Path) -> list[int]:
    """Processes whose working directory is `directory` (the agents avatar started there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == directory:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_closing_the_terminal_leaves_no_agent_behind(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.script("responses", "Here.")
    work = agent_home.workdir.resolve()
    with repl(agent_home, "-p", "codex", "repl") as term:
        term.type("hello")
        term.wait_for(TURN_END, timeout=90)
        assert _processes_in(work)  # avatar and its codex-acp
    # The terminal is gone (tmux hung up on avatar): nothing of it may survive.
    import time

    deadline = time.monotonic() + 10
    while _processes_in(work) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_in(work) == []


def test_the_claude_status_line_shows_this_turn_s_usage(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    model_server.script(
        "anthropic",
        Reply.text("First.").with_usage(1200, 34),
        Reply.text("Second.").with_usage(5600, 78),
    )
    with repl(agent_home, "-p", "claude", "repl") as term:
        term.type("one")
        term.wait_for(TURN_END, timeout=90)
        first = term.wait_for(r"idle\s*$").splitlines()[-1]
        term.type("two")
        term.wait_for("Second.", timeout=90)
        term.wait_for(r"(?s)Second\..*─ \d+\.\ds", timeout=30)
        second = term.wait_for(r"idle\s*$").splitlines()[-1]
    assert "1,234 tok" in first, first
    assert "5,678 tok" in second, second  # this turn's figures, not the one before


def test_switching_to_a_slow_agent_shows_what_is_happening(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("/provider gemini --fresh")
        term.wait_for(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] starting gemini… \d+s", timeout=30)
        last = term.wait_for(r"^gemini · .*idle\s*$", timeout=90).splitlines()[-1]
        assert "starting" not in last


def test_the_handoff_is_one_line_and_ctrl_o_shows_it_before_it_is_sent(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges()
    model_server.chat.append(Reply.text("Noted the lexer plan."))
    model_server.script("anthropic", Reply.text("Carrying on."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("GOAL build the lexer with nom")
        term.wait_for(TURN_END)
        term.type("/provider claude")
        screen = term.wait_for(r"Ctrl-O shows the handoff", timeout=90)
        assert re.search(r"handing the conversation to claude: ~\d+ tokens, the goal", screen)
        assert "## Goal" not in screen  # collapsed: one line until asked for
        term.wait_for(r"^claude · .*idle\s*$", timeout=90)
        term.keys("C-o")  # the transcript, in a pager, ends with the handoff waiting
        screen = term.wait_for(r"the handoff your next prompt sends(?s:.*)^## Goal$")
        assert "GOAL build the lexer with nom" in screen.split("## Goal", 1)[1]
        term.keys("G")  # (to the pager's end: the handoff is long)
        term.keys("q")
        screen = term.wait_for(PROMPT)
        assert body(screen)[-1].strip() == "›"  # the prompt is back, empty
        term.type("carry on")
        term.wait_for("Carrying on.", timeout=90)
        term.wait_for(TURN_END, timeout=30)
        term.keys("C-o")  # sent now: the transcript has it as the prompt, nothing waits
        term.wait_for(r"^› carry on")
        term.keys("G")
        after = term.wait_for(r"^Carrying on\.(?s:.*)\(END\)")
        assert "the handoff your next prompt sends" not in after
        term.keys("q")
    sent = [
        text
        for r in model_server.requests_for("anthropic")
        if r.is_main and "carry on" in (text := r.all_text())
    ]
    assert sent and "GOAL build the lexer with nom" in sent[0]
