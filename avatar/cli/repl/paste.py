"""Pastes in the REPL's input box: a paste of more than `FOLD_LINES` lines shows as one
placeholder, `[pasted N lines]`, and is sent whole; an image pasted as data (a `data:image/…`
address) or taken from the system clipboard with Ctrl-V (`avatar.cli.repl.clipboard`) shows
as `[image N: name]` and goes with the prompt as an image.

Why: a 2,000-line paste put into the box whole made every key echo several times slower (the
box is redrawn whole at each key) and filled the scrollback with the pasted lines. The text
is kept here (`Pastes`) until the prompt is sent, when `take` puts it back in place of its
placeholder; Ctrl-G (`avatar.cli.repl.editor`) shows it in full in the editor, and what comes
back unchanged folds again. A placeholder whose text was edited by hand is no longer one: it
is sent as typed. Backspace right after a placeholder removes it whole (`placeholder_before`).
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field

from avatar.core.errors import UsageError
from avatar.core.prompts import MAX_IMAGE_BYTES, Image, image_mime

#: A paste of more lines than this is folded into a placeholder.
FOLD_LINES = 10
_DATA_URL = re.compile(r"\Adata:(image/[\w.+-]+);base64,([A-Za-z0-9+/=\s]+)\Z")
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def normalised(data: str) -> str:
    """A paste with `\\n` line ends (some terminals paste `\\r\\n` or `\\r`)."""
    return data.replace("\r\n", "\n").replace("\r", "\n")


def image_of_data_url(text: str, name: str) -> Image | None:
    """The image a pasted `data:image/…;base64,…` address holds (named `name` plus its
    extension); None when `text` is not one; a `UsageError` when it is one avatar cannot
    attach (too large, or bytes that are no png/jpeg/gif/webp)."""
    found = _DATA_URL.match(text.strip())
    if found is None:
        return None
    try:
        data = base64.b64decode("".join(found.group(2).split()), validate=True)
    except (binascii.Error, ValueError):
        raise UsageError("the pasted image is not valid base64") from None
    return image_of_bytes(data, name)


def image_of_bytes(data: bytes, name: str) -> Image:
    """`data` as an attachable image named `name` plus its extension; a `UsageError` saying
    why when it cannot be one."""
    if len(data) > MAX_IMAGE_BYTES:
        raise UsageError(
            f"the pasted image is too large to attach ({len(data):,} bytes; "
            f"at most {MAX_IMAGE_BYTES:,})"
        )
    mime = image_mime(data)
    if mime is None:
        raise UsageError("the pasted image is not one avatar can attach (png, jpeg, gif or webp)")
    return Image(f"{name}.{_EXTENSIONS[mime]}", mime, data)


@dataclass
class Pastes:
    """What the placeholders in the input box stand for, until the prompt is sent (and for
    the rest of the run: a line recalled from history still expands)."""

    texts: dict[str, str] = field(default_factory=dict)
    images: dict[str, Image] = field(default_factory=dict)
    _images_seen: int = 0

    def fold(self, data: str) -> str:
        """What a paste of `data` puts into the box: `data` itself when short, else a
        placeholder that stands for it."""
        lines = data.count("\n") + (0 if data.endswith("\n") else 1)
        if lines <= FOLD_LINES:
            return data
        label = self._unique(f"[pasted {lines} lines")
        self.texts[label] = data
        return label

    def image(self, image: Image) -> str:
        """The placeholder of an image pasted or taken from the clipboard."""
        self._images_seen += 1
        label = f"[image {self._images_seen}: {image.name}]"
        self.images[label] = image
        return label

    def _unique(self, head: str) -> str:
        label, n = f"{head}]", 1
        while label in self.texts:
            n += 1
            label = f"{head} #{n}]"
        return label

    def expand(self, text: str) -> str:
        """`text` with every paste placeholder replaced by what it stands for (images'
        placeholders stay: they name the image attached)."""
        for label, pasted in self.texts.items():
            if label in text:
                text = text.replace(label, pasted)
        return text

    def take(self, text: str) -> tuple[str, tuple[Image, ...]]:
        """The prompt to send for the box's `text`: its pastes in full, and the images whose
        placeholders it holds."""
        images = tuple(image for label, image in self.images.items() if label in text)
        return self.expand(text), images

    def refold(self, text: str) -> str:
        """`text` back from the editor: each paste found there unchanged folded again."""
        for label, pasted in self.texts.items():
            if len(pasted) > 0 and pasted in text:
                text = text.replace(pasted, label, 1)
        return text

    def placeholder_before(self, text: str) -> str | None:
        """The placeholder `text` ends with (what Backspace removes whole), if any."""
        if not text.endswith("]"):
            return None
        return next((p for p in (*self.texts, *self.images) if text.endswith(p)), None)
