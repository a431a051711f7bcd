"""Images in the REPL, typed into the installed `avatar` in tmux (issue 23): `@shot.png` or an
image file dropped on the terminal (its path pasted) is shown as attached, and the image
reaches the model, on the native agent and on claude-agent-acp (the full ACP bridge)."""

from __future__ import annotations

import pytest

from tests.e2e.test_terminal import TURN_DONE, repl
from tests.support.homes import AgentHome, require_bridges
from tests.support.images import write_png
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ATTACHED = r"\(attached image shot\.png \(image/png, 73 bytes\)\)"


def _images(server: FakeModelServer, api: str) -> list[tuple[str, bytes]]:
    return [image for r in server.requests_for(api) if r.is_main for image in r.images()]


@pytest.mark.parametrize(("provider", "api"), [("native", "chat"), ("claude-acp", "anthropic")])
def test_at_image_is_shown_attached_and_reaches_the_model(
    agent_home: AgentHome, model_server: FakeModelServer, provider: str, api: str
) -> None:
    if provider == "claude-acp":
        require_bridges("claude-agent-acp")
    png = write_png(agent_home.workdir / "shot.png")
    model_server.script(api, Reply.text("A red rectangle."))
    with repl(agent_home, "-p", provider, "repl") as term:
        term.type("what is this @shot.png")
        screen = term.wait_for(ATTACHED + r"(?s:.*)A red rectangle\.(?s:.*)" + TURN_DONE)
        assert "› what is this @shot.png" in screen
    assert _images(model_server, api) == [("image/png", png)]


def test_a_dropped_image_is_attached_and_a_bad_one_refused_in_one_line(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    png = write_png(agent_home.root / "shot.png")  # outside the project, as from a desktop
    (agent_home.workdir / "fake.png").write_text("not an image\n")
    model_server.script("chat", Reply.text("Seen it."))
    with repl(agent_home, "-p", "native", "repl") as term:
        term.type("look at ", enter=False)
        term.paste(f"'{agent_home.root / 'shot.png'}'")
        term.type(" please")
        term.wait_for(ATTACHED + r"(?s:.*)Seen it\.(?s:.*)" + TURN_DONE)
        term.type("and @fake.png")
        screen = term.wait_for(r"avatar: fake\.png: not an image avatar can attach")
        assert "Traceback" not in screen
    assert _images(model_server, "chat") == [("image/png", png)]
    assert len([r for r in model_server.requests_for("chat") if r.is_main]) == 1
