"""Images attached to a prompt (issue 23): `avatar chat "what is this @shot.png"` sends the
image itself to the model, through the real agents (the native agent, Claude Code, codex-acp,
claude-agent-acp, Gemini CLI), and writes it down as `[image: shot.png]`, never its bytes;
the Python API takes a `Prompt` with the image; an agent that takes no images, a file too
large or not an image is refused with one line before anything is sent."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from avatar import Engine
from avatar.core.prompts import MAX_IMAGE_BYTES, Prompt, read_image
from tests.integration.test_acp_cli import write_fake_provider
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env, require_bridges
from tests.support.images import write_png
from tests.support.model_server import FakeModelServer, Reply

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

API = {
    "native": "chat",
    "native/anthropic": "anthropic",  # the native agent on an Anthropic model
    "claude": "anthropic",
    "codex": "responses",
    "claude-acp": "anthropic",
    "gemini": "gemini",
}
BINARY = {
    "claude": "claude",
    "codex": "codex-acp",
    "claude-acp": "claude-agent-acp",
    "gemini": "gemini",
}


@pytest.fixture
def avatar(agent_home: AgentHome) -> Avatar:
    return Avatar(agent_home, avatar_env(agent_home))


def images_sent(server: FakeModelServer, api: str) -> list[tuple[str, bytes]]:
    """The images of the conversation's requests (the agents' side calls aside)."""
    return [image for r in server.requests_for(api) if r.is_main for image in r.images()]


def files_holding(root: Path, needle: str) -> list[Path]:
    """Files under `root` whose bytes contain `needle`."""
    return [p for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.mark.parametrize("provider", list(API))
def test_an_image_reaches_the_model_and_only_its_name_is_kept(
    avatar: Avatar, model_server: FakeModelServer, provider: str
) -> None:
    if provider in BINARY:
        require_bridges(BINARY[provider])
    png = write_png(avatar.home.workdir / "shot.png")
    model_server.script(API[provider], Reply.text("A red rectangle."))
    which = ["-p", "native", "-m", "anthropic/claude-sonnet-4-5"] if "/" in provider else []
    said = avatar(*(which or ["-p", provider]), "chat", "what is this @shot.png")
    assert "A red rectangle." in said.stdout
    assert "attached image shot.png (image/png, 73 bytes)" in said.stderr
    assert images_sent(model_server, API[provider]) == [("image/png", png)]

    sid, _, _ = Avatar.session(said)
    shown = avatar("session", "show", sid).stdout
    exported = avatar("session", "export", sid, "--format", "json").stdout
    model_server.script("chat", Reply.text("Handed over."))
    handed = avatar("-p", "native", "chat", "--from", sid, "go on")
    assert "Handed over." in handed.stdout
    handoff = [r for r in model_server.requests_for("chat") if r.is_main][-1]
    # The session is named after what was said; the image stays out of its later records.
    assert "what is this @shot.png" in json.loads(exported)["messages"][0]["text"]
    assert handoff.images() == [] and "what is this @shot.png" in handoff.all_text()
    encoded = base64.b64encode(png).decode()[:24]
    for text in (shown, exported, handoff.all_text()):
        assert encoded not in text
    assert files_holding(Path(avatar.env["AVATAR_HOME"]), encoded) == []
    if provider.startswith("native"):  # its store is avatar's own: the name stands for it
        assert "[image: shot.png]" in shown
        assert "[image: shot.png]" in handoff.all_text()


async def _python_api_turn(home: AgentHome, provider: str, prompt: Prompt) -> str:
    env = avatar_env(home)
    engine = Engine.from_config(
        home.workdir, provider=provider, env=env, home=Path(env["AVATAR_HOME"])
    )
    try:
        opened = await engine.open()
        assert type(opened.bridge).__name__ == "ACPBridge"  # the SDK's bridge, not a one-shot
        return "".join([getattr(e, "text", "") async for e in engine.send(prompt)])
    finally:
        await engine.close()


def test_the_python_api_sends_a_prompt_with_an_image_to_codex(
    agent_home: AgentHome, model_server: FakeModelServer
) -> None:
    import asyncio

    require_bridges("codex-acp")
    png = write_png(agent_home.workdir / "shot.png")
    model_server.script("responses", Reply.text("Red."), Reply.text("Still text."))
    image = read_image(agent_home.workdir / "shot.png")
    asked = Prompt("what colour is it?", (image,))
    assert "Red." in asyncio.run(_python_api_turn(agent_home, "codex", asked))
    assert images_sent(model_server, "responses") == [("image/png", png)]
    # A plain string still works, and sends no image.
    assert "Still text." in asyncio.run(_python_api_turn(agent_home, "codex", "and now?"))
    assert len(images_sent(model_server, "responses")) == 1


def test_an_agent_that_takes_no_images_refuses_them_in_one_line(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    write_fake_provider(avatar.home)
    write_png(avatar.home.workdir / "shot.png")
    refused = avatar("-p", "fake", "chat", "what is this @shot.png", code=2)
    assert refused.stderr.splitlines()[-1] == ("avatar: attaching images is not supported by fake")
    assert "Traceback" not in refused.stderr
    asked = (avatar.home.root / "fake-state" / "requests.jsonl").read_text().splitlines()
    methods = [json.loads(line)["method"] for line in asked]
    assert "session/new" in methods and "session/prompt" not in methods


def test_a_file_too_large_or_not_an_image_is_refused_before_anything_is_sent(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    work = avatar.home.workdir
    big = work / "big.png"
    big.write_bytes(write_png(work / "shot.png") + b"\0" * MAX_IMAGE_BYTES)
    (work / "notes.png").write_text("this is text, named as an image\n")
    too_large = avatar("-p", "native", "chat", "look at @big.png", code=2)
    assert too_large.stderr.strip().splitlines() == [
        f"avatar: big.png: image too large to attach ({big.stat().st_size:,} bytes;"
        f" at most {MAX_IMAGE_BYTES:,})"
    ]
    unknown = avatar("-p", "native", "chat", "look at @notes.png", code=2)
    assert unknown.stderr.strip().splitlines() == [
        "avatar: notes.png: not an image avatar can attach (png, jpeg, gif or webp)"
    ]
    assert model_server.requests_for("chat") == []


def test_a_pasted_image_path_is_attached(
    avatar: Avatar, model_server: FakeModelServer, tmp_path: Path
) -> None:
    dropped = tmp_path / "Screen Shot.png"  # outside the project, with a space
    png = write_png(dropped)
    escaped = str(dropped).replace(" ", "\\ ")
    said = avatar("-p", "native", "chat", f"what is in {escaped} ?")
    assert "attached image Screen Shot.png" in said.stderr
    assert images_sent(model_server, "chat") == [("image/png", png)]
    quoted = avatar("-p", "native", "chat", f"and in '{dropped}'")
    assert quoted.returncode == 0
    assert len(images_sent(model_server, "chat")) == 2


def test_a_pasted_image_path_goes_as_text_to_an_agent_that_takes_no_images(
    avatar: Avatar, model_server: FakeModelServer
) -> None:
    write_fake_provider(avatar.home)
    shot = avatar.home.workdir / "shot.png"
    write_png(shot)
    said = avatar("-p", "fake", "chat", f"optimise {shot}")  # the path, not `@`: no refusal
    assert f"reply 1 to 'optimise {shot}'" in said.stdout
    assert "notice: fake takes no images: shot.png sent as its path" in said.stderr
