"""The prompt box's daily tools, typed into the installed `avatar` in tmux (issue 33): Ctrl-G
edits the prompt in `$EDITOR` (a scripted one), a long paste shows as `[pasted N lines]` and
reaches the model whole, and an image pasted as data or taken from the clipboard with Ctrl-V
is attached — on the native agent, Claude Code (stream-json) and claude-agent-acp (ACP)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.e2e.test_terminal import PROMPT, TURN_DONE, body, repl
from tests.support.homes import AgentHome, require_bridges
from tests.support.images import png_bytes
from tests.support.model_server import FakeModelServer, RecordedRequest, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Each provider tried, with the API its model requests arrive on.
AGENTS = [("native", "chat"), ("claude", "anthropic"), ("claude-acp", "anthropic")]
PASTE = "\n".join(f"pasted line {i:04d}" for i in range(1, 2001))


def _needs(provider: str) -> None:
    if provider == "claude":
        require_bridges("claude")
    elif provider == "claude-acp":
        require_bridges("claude-agent-acp")


def _main(server: FakeModelServer, api: str) -> list[RecordedRequest]:
    return [r for r in server.requests_for(api) if r.is_main]


def _users(server: FakeModelServer, api: str) -> list[str]:
    return [m.text for r in _main(server, api) for m in r.messages() if m.role == "user"]


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(("provider", "api"), AGENTS)
def test_ctrl_g_edits_the_prompt_in_the_editor_and_enter_sends_what_it_saved(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    _needs(provider)
    seen, where = agent_home.root / "seen.md", agent_home.root / "where"
    editor = _script(
        agent_home.root / "editor",
        f'cp "$1" {seen}\npwd > {where}\n'
        'printf "refined in the editor\\nwith a second line\\n" >> "$1"\n',
    )
    model_server.script(api, Reply.text("Edited prompt received."))
    with repl(agent_home, "-p", provider, "repl", EDITOR=editor) as term:
        term.type("first draft", enter=False)
        term.keys("C-g")
        screen = term.wait_for(r"^  ?refined in the editor|^with a second line")
        assert "› first draft" in screen  # back in the box, not sent yet
        assert not _main(model_server, api)
        term.keys("Enter")
        term.wait_for(r"Edited prompt received\.(?s:.*)" + TURN_DONE, timeout=90)
    assert seen.read_text() == "first draft\n"  # the editor had the box's text
    # It ran in a folder of its own: no editor config of the project's was read.
    assert not Path(where.read_text().strip()).is_relative_to(agent_home.workdir)
    sent = [text for text in _users(model_server, api) if "first draft" in text]
    assert sent and sent[-1].endswith("first draft\nrefined in the editor\nwith a second line")


def test_ctrl_g_without_an_editor_says_how_to_set_one(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    with repl(agent_home, "-p", "native", "repl", EDITOR="", VISUAL="") as term:
        term.type("kept", enter=False)
        term.keys("C-g")
        screen = term.wait_for(r"avatar: Ctrl-G edits the prompt in \$VISUAL or \$EDITOR")
        assert "Traceback" not in screen
        term.wait_for(r"^› kept\s*$")


@pytest.mark.parametrize(("provider", "api"), AGENTS)
def test_a_long_paste_shows_folded_and_reaches_the_model_whole(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    _needs(provider)
    model_server.script(api, Reply.text("Read all of it."))
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("summarise this: ", enter=False)
        term.paste(PASTE)
        screen = term.wait_for(r"^› summarise this: \[pasted 2000 lines\]\s*$")
        assert "pasted line 0001" not in screen  # not in the box, not in the scrollback
        term.keys("Enter")
        screen = term.wait_for(r"Read all of it\.(?s:.*)" + TURN_DONE, timeout=90)
        assert "pasted line" not in screen
    sent = [text for text in _users(model_server, api) if "summarise this:" in text]
    assert sent and sent[-1].count("pasted line ") == 2000, sent[-1][:300] if sent else sent
    assert "pasted line 0001" in sent[-1] and "pasted line 2000" in sent[-1]


def test_a_short_paste_stays_as_it_is_and_a_fold_goes_with_backspace_or_shows_in_the_editor(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    seen = agent_home.root / "seen.md"
    editor = _script(agent_home.root / "editor", f'cp "$1" {seen}\n')  # changes nothing
    model_server.chat.append(Reply.text("Both seen."))
    with repl(agent_home, "-p", "native", "repl", EDITOR=editor) as term:
        term.paste(PASTE)
        term.wait_for(r"^› \[pasted 2000 lines\]\s*$")
        term.keys("BSpace")  # the placeholder goes whole, with what it stands for
        term.wait_for(PROMPT)
        term.paste("one\ntwo\nthree")
        term.wait_for(r"^› one\s*\n\s*two\s*\n\s*three\s*$")
        term.keys("Enter")
        term.wait_for(TURN_DONE)
        term.paste(PASTE)
        term.keys("C-g")  # the editor shows it in full; unchanged, it folds again
        screen = term.wait_for(r"^› \[pasted 2000 lines\]\s*$")
        assert "pasted line" not in "\n".join(body(screen))
    assert seen.read_text().count("pasted line ") == 2000
    assert _users(model_server, "chat") == ["one\ntwo\nthree"]


@pytest.mark.parametrize(("provider", "api"), AGENTS)
def test_an_image_pasted_as_data_or_from_the_clipboard_is_attached(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    _needs(provider)
    png = png_bytes()
    # The clipboard tool of a Wayland desktop, scripted: it offers a PNG and gives its bytes.
    clipboard = agent_home.root / "clipboard.png"
    clipboard.write_bytes(png_bytes(2, 2))
    tools = agent_home.root / "bin"
    tools.mkdir()
    _script(
        tools / "wl-paste",
        f'case "$1" in --list-types) echo text/plain; echo image/png;; *) cat {clipboard};; esac\n',
    )
    model_server.script(api, Reply.text("Two red images."))
    env = {"WAYLAND_DISPLAY": "wayland-0", "PATH": f"{tools}:" + agent_home.env["PATH"]}
    with repl(agent_home, "-p", provider, "repl", **env) as term:
        term.type("compare ", enter=False)
        term.paste("data:image/png;base64," + base64.b64encode(png).decode())
        term.type(" with ", enter=False)
        term.keys("C-v")
        term.wait_for(r"^› compare \[image 1: pasted\.png\] with \[image 2: clipboard\.png\]")
        term.keys("Enter")
        screen = term.wait_for(r"Two red images\.(?s:.*)" + TURN_DONE, timeout=90)
        assert "(attached image pasted.png (image/png, 73 bytes))" in screen
        assert "(attached image clipboard.png (image/png, " in screen
    images = [image for r in _main(model_server, api) for image in r.images()]
    assert ("image/png", png) in images and ("image/png", clipboard.read_bytes()) in images


def test_ctrl_v_with_no_clipboard_tool_says_what_it_needs(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    with repl(agent_home, "-p", "native", "repl", WAYLAND_DISPLAY="", DISPLAY="") as term:
        term.keys("C-v")
        screen = term.wait_for(r"avatar: no clipboard to read an image from")
        assert "Traceback" not in screen


def test_programs_planted_in_the_project_are_never_run_for_the_user(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    # An agent may write anywhere in the project: an activated `.venv/bin` there is on PATH.
    planted = agent_home.workdir / ".venv" / "bin"
    planted.mkdir(parents=True)
    ran = agent_home.root / "ran"
    for name in ("less", "wl-paste", "my-editor"):
        _script(planted / name, f"echo {name} >> {ran}\n")
    env = {
        "PATH": f"{planted}:" + agent_home.env["PATH"],
        "EDITOR": "my-editor",
        "WAYLAND_DISPLAY": "wayland-0",
        "PAGER": "",
    }
    with repl(agent_home, "-p", "native", "repl", **env) as term:
        term.keys("C-g")
        term.wait_for(r"avatar: the editor my-editor is not found on PATH \(outside the project\)")
        term.keys("C-v")
        term.wait_for(r"avatar: no clipboard to read an image from")
        term.keys("C-o")  # the system's less, not the one in the project
        term.wait_for(r"nothing in this session yet")
        term.keys("q")
        term.wait_for(PROMPT)
    assert not ran.exists(), ran.read_text()
