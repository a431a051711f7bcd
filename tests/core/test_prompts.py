"""A prompt with images (`avatar.core.prompts`): the type from magic bytes, the size limit, the
record without bytes, and each wire format's image part (native clients, Claude Code, ACP)."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.bridges.acp.content import prompt_blocks, takes_images
from avatar.bridges.claude.stream import user_message
from avatar.cli.repl.mentions import read_mentions
from avatar.core.errors import UsageError
from avatar.core.prompts import MAX_IMAGE_BYTES, Image, Prompt, image_mime, read_image
from avatar.native.llm.anthropic import to_anthropic_messages
from avatar.native.llm.openai import to_openai_messages
from avatar.native.llm.types import Message
from tests.support.images import png_bytes

PNG = png_bytes()
SHOT = Image("shot.png", "image/png", PNG)
B64 = SHOT.base64


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0\0\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\0", "image/gif"),
        (b"RIFF\x10\0\0\0WEBPVP8 ", "image/webp"),
        (b"%PDF-1.7", None),
        (b"RIFF\x10\0\0\0WAVEfmt ", None),
    ],
)
def test_the_type_comes_from_the_first_bytes(head: bytes, mime: str | None) -> None:
    assert image_mime(head) == mime


def test_read_image_refuses_what_is_too_large_or_not_an_image(tmp_path: Path) -> None:
    (tmp_path / "ok.jpg").write_bytes(PNG)  # the bytes decide, not the name
    assert read_image(tmp_path / "ok.jpg").mime == "image/png"
    (tmp_path / "big.png").write_bytes(PNG + b"\0" * MAX_IMAGE_BYTES)
    with pytest.raises(UsageError, match=r"^big\.png: image too large to attach"):
        read_image(tmp_path / "big.png")
    (tmp_path / "a.png").write_text("text")
    with pytest.raises(UsageError, match=r"^a\.png: not an image avatar can attach"):
        read_image(tmp_path / "a.png")


def test_a_prompt_is_recorded_with_image_names_only() -> None:
    asked = Prompt("what is this?", (SHOT,))
    assert asked.recorded == "what is this?\n\n[image: shot.png]"
    assert Prompt.of("plain") == Prompt("plain") and Prompt.of(asked) is asked
    assert Prompt("", (SHOT,)).recorded == "[image: shot.png]"


def test_mentions_find_images_pasted_paths_and_still_inlines_text(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("alpha\n")
    (tmp_path / "My Shot.png").write_bytes(PNG)
    asked = read_mentions("see @shot.png and @notes.txt and @shot.png", tmp_path)
    assert [i.name for i in asked.images] == ["shot.png"]
    assert '<file path="notes.txt">\nalpha\n</file>' in asked.text
    assert "iVBOR" not in asked.text
    dropped = str(tmp_path / "My Shot.png")
    for typed in (f"'{dropped}'", dropped.replace(" ", "\\ "), f'"{dropped}"'):
        assert [i.name for i in read_mentions(f"look {typed} now", tmp_path).images] == [
            "My Shot.png"
        ]
    assert read_mentions("no /such/file.png here", tmp_path).images == ()


def test_each_wire_format_carries_the_image() -> None:
    message = Message("user", "what is this?", images=(SHOT,))
    anthropic = to_anthropic_messages([message])[0]["content"]
    assert anthropic[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": B64},
    }
    openai = to_openai_messages("", [message])[0]["content"]
    assert openai[1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64}"}}
    assert to_openai_messages("", [Message("user", "hi")])[0]["content"] == "hi"
    claude = user_message(Prompt("what is this?", (SHOT,)))["message"]["content"]
    assert claude[1]["source"] == {"type": "base64", "media_type": "image/png", "data": B64}
    assert prompt_blocks(Prompt("what is this?", (SHOT,)))[1] == {
        "type": "image",
        "mimeType": "image/png",
        "data": B64,
    }


def test_an_acp_agent_takes_images_only_when_it_says_so() -> None:
    assert takes_images({"promptCapabilities": {"image": True}})
    assert not takes_images({"promptCapabilities": {"image": False, "embeddedContext": True}})
    assert not takes_images({}) and not takes_images(None)
