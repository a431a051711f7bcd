"""A prompt with what is attached to it: the text the user typed plus images (`Prompt`).

`Engine.send` takes a plain string or a `Prompt`; every bridge gets a `Prompt`. An image is
sent to the agent as the bytes of the file, but recorded everywhere else (avatar's copy of the
turns, the native store, handoffs, exports) as `[image: name.png]`: no base64 in any file.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from avatar.core.errors import UsageError

#: The largest image sent (the Anthropic API takes 5 MB per image; OpenAI's 20 MB).
MAX_IMAGE_BYTES = 5 * 1024 * 1024

#: The image formats every agent that takes images accepts, by their first bytes.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

#: File names taken to mean an image (the bytes then have to say so too).
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


def image_mime(data: bytes) -> str | None:
    """The MIME type of an image from its magic bytes (png, jpeg, gif, webp); None otherwise."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((mime for magic, mime in _MAGIC if data.startswith(magic)), None)


@dataclass(frozen=True)
class Image:
    """An image attached to a prompt: its file name (for the record), MIME type and bytes.
    `pasted`: found as a path in the text (a dropped file), not named with `@`; an agent
    that takes no images then gets the path as text instead of a refusal."""

    name: str
    mime: str
    data: bytes
    pasted: bool = False

    @property
    def base64(self) -> str:
        """The bytes as base64 text, as the wire formats carry them."""
        return base64.b64encode(self.data).decode("ascii")

    @property
    def summary(self) -> str:
        """What the user is told was attached: `shot.png (image/png, 12 KB)`."""
        size = (
            f"{len(self.data):,} bytes"
            if len(self.data) < 1024
            else f"{len(self.data) // 1024:,} KB"
        )
        return f"{self.name} ({self.mime}, {size})"

    @property
    def label(self) -> str:
        """How the image is recorded wherever its bytes are not: `[image: name.png]`."""
        return f"[image: {self.name}]"


def read_image(path: Path, name: str | None = None, *, pasted: bool = False) -> Image:
    """The image file at `path` as an `Image` (named `name`, else its file name); a
    `UsageError` saying why when it is too large, unreadable or not a png/jpeg/gif/webp."""
    shown = name or path.name
    try:
        size = path.stat().st_size
        if size > MAX_IMAGE_BYTES:
            raise UsageError(
                f"{shown}: image too large to attach ({size:,} bytes; at most {MAX_IMAGE_BYTES:,})"
            )
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{shown}: cannot read the image: {e.strerror or e}") from None
    mime = image_mime(data)
    if mime is None:
        raise UsageError(f"{shown}: not an image avatar can attach (png, jpeg, gif or webp)")
    return Image(shown, mime, data, pasted)


@dataclass(frozen=True)
class Prompt:
    """What the user sends in one turn: `text`, and the `images` attached to it."""

    text: str
    images: tuple[Image, ...] = ()

    @classmethod
    def of(cls, prompt: str | Prompt) -> Prompt:
        """`prompt` as a `Prompt` (a string has no attachments)."""
        return prompt if isinstance(prompt, Prompt) else cls(prompt)

    def with_text(self, text: str) -> Prompt:
        """The same attachments with another text (handed-over context, refusals added)."""
        return Prompt(text, self.images)

    @property
    def recorded(self) -> str:
        """The prompt as it is written down: the text, then `[image: name]` per image."""
        labels = "\n".join(image.label for image in self.images)
        return f"{self.text}\n\n{labels}" if labels and self.text else labels or self.text
