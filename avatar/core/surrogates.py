"""Lone surrogates: `"\\ud800"` is valid JSON, but the string it decodes to is no Unicode text
(UTF-8 cannot encode it), and every write of it fails. Text from a model or an agent is
decoded with `loads`, which keeps each lone surrogate as its visible escape (`\\ud800`): the
text is stored, shown and sent on, and nothing is lost to one bad character.
"""

from __future__ import annotations

import json
import re
from typing import Any

_LONE = re.compile("[\ud800-\udfff]")
# A JSON text can hold a surrogate only as a `\uD8xx`-`\uDFxx` escape (raw ones are not UTF-8).
_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its escape (`\\ud800`), six characters."""
    if _LONE.search(text) is None:
        return text
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def without_surrogates(value: Any) -> Any:
    """A decoded JSON value with `escape_surrogates` applied to every string in it."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {without_surrogates(k): without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_surrogates(v) for v in value]
    return value


def may_hold_surrogate(data: bytes) -> bool:
    """False when JSON `data` surely decodes to no lone surrogate (a fast byte search)."""
    return b"\\ud" in data or b"\\uD" in data


def loads(data: str | bytes) -> Any:
    """`json.loads`, lone surrogates escaped (the walk runs only when an escape could be one:
    an emoji sent as an escaped pair, say)."""
    value = json.loads(data)
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    return without_surrogates(value) if _ESCAPE.search(text) else value
