"""`@path` mentions in a prompt (REPL and `avatar chat`): the file a mention names goes with the
message. (`attach` names one thing in avatar: joining a live session, `avatar attach`.)

Providers differ in how they take files (ACP resource blocks, Claude's own `@` syntax, plain
text for the native agent); the text form reaches all of them the same way, so each `@path`
that names a readable file inside the project is added after the prompt as a fenced block.

An image (`@shot.png`, or the path of an image file pasted or dropped into the prompt, as a
terminal types it: absolute or `~/`, maybe quoted or with backslash-escaped spaces) is
attached as an image instead (`avatar.core.prompts`), for the agents that take images.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from avatar.core.prompts import IMAGE_SUFFIXES, Image, Prompt, image_mime, read_image

MAX_BYTES = 200_000  # a larger file is named, not inlined
_REF = re.compile(r"(?:^|(?<=\s))@([\w./-]+)")
#: A pasted path of an image: absolute or under ~, quoted or with escaped spaces.
_PASTED = re.compile(
    r"""(?:^|(?<=\s))('(?:~|/)[^'\n]+'|"(?:~|/)[^"\n]+"|(?:~|/)(?:\\.|[^\s'"])+)"""
)


def read_mentions(prompt: str, cwd: Path) -> Prompt:
    """`prompt` with its images attached (each `@image` and pasted image path, once) and the
    content of every other `@path` appended; a `UsageError` for an image too large or not
    png/jpeg/gif/webp."""
    images: dict[Path, Image] = {}
    root = cwd.resolve()
    for match in _REF.finditer(prompt):
        path = (root / match.group(1)).resolve()
        if path not in images and _is_image(path):
            images[path] = read_image(path, match.group(1))
    for match in _PASTED.finditer(prompt):
        token = match.group(1)
        try:
            words = shlex.split(token)
        except ValueError:
            continue
        if len(words) != 1 or Path(words[0]).suffix.lower() not in IMAGE_SUFFIXES:
            continue
        path = Path(words[0]).expanduser().resolve()
        if path not in images and path.is_file():
            images[path] = read_image(path, pasted=True)
    text = inline_files(prompt, cwd, skip=set(images))
    return Prompt(text, tuple(images.values()))


def _is_image(path: Path) -> bool:
    """A file named as an image, or whose first bytes say it is one."""
    if not path.is_file():
        return False
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return True
    try:
        with path.open("rb") as f:
            return image_mime(f.read(16)) is not None
    except OSError:
        return False


def inline_files(prompt: str, cwd: Path, skip: set[Path] | None = None) -> str:
    """`prompt` with the content of every `@path` it names appended (once each; not the
    files in `skip`, attached otherwise)."""
    root = cwd.resolve()
    blocks: list[str] = []
    seen: set[Path] = set(skip or ())
    for match in _REF.finditer(prompt):
        path = (root / match.group(1)).resolve()
        if path in seen or not path.is_file() or not path.is_relative_to(root):
            continue
        seen.add(path)
        rel = path.relative_to(root).as_posix()
        try:
            if path.stat().st_size > MAX_BYTES:
                blocks.append(f"[{rel}: {path.stat().st_size} bytes, too large to attach]")
                continue
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        blocks.append(f'<file path="{rel}">\n{text.rstrip()}\n</file>')
    return prompt if not blocks else prompt + "\n\n" + "\n\n".join(blocks)


_ATTACHED = re.compile(
    r'\s*(<file path="[^"]*">\n.*?\n</file>|\[[^\]\n]+: \d+ bytes, too large to attach\])', re.S
)


def strip_inlined(text: str) -> str:
    """A prompt as the user typed it: without the files `inline_files` appended."""
    return _ATTACHED.sub("", text) if "<file path=" in text or "too large" in text else text
