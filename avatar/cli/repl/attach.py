"""`@path` in a prompt: the named file of the project is attached to the message.

Providers differ in how they take files (ACP resource blocks, Claude's own `@` syntax, plain
text for the native agent); the text form reaches all of them the same way, so each `@path`
that names a readable file inside the project is added after the prompt as a fenced block.
"""

from __future__ import annotations

import re
from pathlib import Path

MAX_BYTES = 200_000  # a larger file is named, not inlined
_REF = re.compile(r"(?:^|(?<=\s))@([\w./-]+)")


def attach_files(prompt: str, cwd: Path) -> str:
    """`prompt` with the content of every `@path` it names appended (once each)."""
    root = cwd.resolve()
    blocks: list[str] = []
    seen: set[Path] = set()
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


def detach_files(text: str) -> str:
    """A prompt as the user typed it: without the files `attach_files` appended."""
    return _ATTACHED.sub("", text) if "<file path=" in text or "too large" in text else text
