"""End-to-end: the installed `avatar` REPL in a pseudo-terminal (pexpect), against the fake server.

The native provider answers through the fake server's chat-completions API; the switch test
hands the conversation to the real codex-acp and checks codex's model request carries it.
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
from pathlib import Path

import pexpect

from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.model_server import FakeModelServer, Reply
from tests.support.secret_shapes import SHAPES, leaks

AVATAR = shutil.which("avatar", path=str(Path(sys.executable).parent)) or "avatar"
ULID = r"[0-9A-HJKMNP-TV-Z]{26}"
TURN_END = r"─ \d+\.\ds"  # the line that closes a turn (time, tokens)


def spawn(home: AgentHome, *args: str, env: dict[str, str] | None = None) -> pexpect.spawn:
    child = pexpect.spawn(
        AVATAR,
        list(args),
        cwd=str(home.workdir),
        env=env or avatar_env(home),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    child.expect("avatar REPL")
    return child


def test_repl_chat_sessions_new_resume_status_quit(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(Reply.text("First answer."), Reply.text("Second answer."))
    child = spawn(agent_home, "-p", "native", "repl")
    child.sendline("remember the pelican")
    child.expect(rf"session: ({ULID}) \(native, new\)")
    first_id = child.match.group(1)
    child.expect("First answer.")
    child.expect(TURN_END)

    child.sendline("/sessions")
    child.expect(rf"\*\s+native\s+{first_id[:8]}\w*\s+remember the pelican\s+just now\s+2")

    child.sendline("/new")
    child.expect(rf"session: ({ULID}) \(native, new\)")
    assert child.match.group(1) != first_id

    child.sendline(f"/resume {first_id[:12]}")
    child.expect(rf"session: {first_id} \(native, resumed\)")
    child.sendline("what did I ask you to remember?")
    child.expect("Second answer.")
    last = model_server.requests_for("chat")[-1].all_text()
    assert "remember the pelican" in last and "First answer." in last

    child.sendline("/status")
    child.expect(r"provider: native")
    child.expect(r"model: openai/gpt-4o")
    child.expect(rf"session: {first_id} \(resumed\)")
    child.expect("capabilities: list, load, resume, continue_last, fork, delete, cancel")

    child.sendline("/nonsense")
    child.expect(r"unknown command /nonsense")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    # Input history persists across runs (prompt-toolkit's file history in AVATAR_HOME).
    history = Path(avatar_env(agent_home)["AVATAR_HOME"]) / "history"
    assert "remember the pelican" in history.read_text()


def test_the_input_history_file_holds_no_secret(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    key = SHAPES[0].text
    model_server.chat.append(Reply.text("Noted."))
    child = spawn(agent_home, "-p", "native", "repl")
    child.sendline(f"deploy with {key} please")
    child.expect("Noted.")
    child.expect(TURN_END)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    child.close()
    history = (Path(avatar_env(agent_home)["AVATAR_HOME"]) / "history").read_text()
    assert "deploy with [redacted] please" in history and leaks(history) == []
    # The live conversation is the user's own: the model got what was typed.
    assert key in model_server.requests_for("chat")[-1].all_text()


def test_ctrl_c_interrupts_the_turn_not_the_repl(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.slow_text(["slow ", "stream ", "that ", "never ", "ends "] * 20, delay=0.2),
        Reply.text("Still here."),
    )
    child = spawn(agent_home, "-p", "native", "repl")
    child.sendline("start something long")
    child.expect("slow stream")
    child.sendintr()
    child.expect(r"\(interrupted\)")
    child.sendline("are you there?")
    child.expect("Still here.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_provider_switch_hands_the_conversation_to_codex(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    require_bridges("codex-acp")
    model_server.chat.append(Reply.text("The codeword is PELICAN."))
    model_server.responses.append(Reply.text("You told me: PELICAN."))
    child = spawn(agent_home, "-p", "native", "repl")
    child.sendline("pick a codeword")
    child.expect("The codeword is PELICAN.")
    child.expect(TURN_END)
    child.sendline("/provider codex")
    child.expect(r"session: \S+ \(codex, new\)", timeout=60)
    child.sendline("what was the codeword?")
    child.expect("You told me: PELICAN.", timeout=60)
    codex_request = model_server.requests_for("responses")[-1].all_text()
    assert "pick a codeword" in codex_request
    assert "The codeword is PELICAN." in codex_request
    assert "what was the codeword?" in codex_request
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_repl_without_a_terminal_reads_lines(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    import subprocess

    model_server.chat.append(Reply.text("Piped answer."))
    out = subprocess.run(
        [AVATAR, "-p", "native", "repl"],
        input="hello from a pipe\n/session\n",
        capture_output=True,
        text=True,
        env=avatar_env(agent_home),
        cwd=agent_home.workdir,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "Piped answer." in out.stdout
    assert re.search(rf"{ULID} \(native, new\)", out.stdout)


def test_repl_asks_before_a_write_and_honours_the_answer(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    model_server.chat.append(
        Reply.tool_call("write", {"path": "yes.txt", "content": "allowed"}),
        Reply.text("Wrote it."),
        Reply.tool_call("write", {"path": "no.txt", "content": "denied"}),
        Reply.text("Could not write."),
    )
    child = spawn(agent_home, "-p", "native", "repl")
    child.sendline("write yes.txt")
    child.expect(r"permission: write yes.txt")
    child.expect(r"\[y\] yes\s+\[a\] always\s+\[n\] no")
    child.sendline("y")
    child.expect("Wrote it.")
    child.sendline("write no.txt")
    child.expect(r"permission: write no.txt")
    child.sendline("n")
    child.expect("Could not write.")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    assert (agent_home.workdir / "yes.txt").read_text() == "allowed"
    assert not (agent_home.workdir / "no.txt").exists()


def test_text_typed_during_a_native_turn_steers_it(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    # The first answer holds its last line back until the steering is taken: the line is typed
    # while the turn runs however slow the machine is (a 3 s answer raced it under load). Its
    # first line ends in a newline: a terminal without redraws prints whole lines only.
    steered_in = threading.Event()
    first = Reply.text("", chunks=["working ", "on ", "it\n", "and done"]).held(steered_in)
    model_server.chat.append(first, Reply.text("Steered answer."))
    child = spawn(agent_home, "-p", "native", "repl")
    child.sendline("start the task")
    child.expect("working on")
    child.sendline("use tabs, not spaces")
    child.expect(r"\(steering the running turn\)")
    steered_in.set()
    child.expect("Steered answer.", timeout=30)
    steered = model_server.requests_for("chat")[-1].all_text()
    assert "start the task" in steered and "use tabs, not spaces" in steered
    child.sendline("/quit")
    child.expect(pexpect.EOF)
