"""JSON for the paths that must start fast: `dumps` and `loads` without importing `json`.

`import json` loads `re`, and `re` loads `enum`: ~5.5 ms, most of what a command through the
server costs its client beyond Python's own start (measured with -X importtime). The work is
done by the C accelerator `json` itself uses (`_json`): this module only builds its scanner and
encoder the way `json` does. Where that accelerator is missing or its signature differs (another
Python), it falls back to `json`, with the same results.

Text that is not JSON raises `DecodeError`, a ValueError that says what and where.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`: see avatar/server/protocol.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Context:
    """What `_json.make_scanner` reads: `json.JSONDecoder`'s defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


_WHITESPACE = " \t\n\r"


class DecodeError(ValueError):
    """Text that is not JSON: `msg` says what, `lineno` and `colno` (from 1) where."""

    def __init__(self, msg: str, text: str, pos: int) -> None:
        self.msg = msg
        self.lineno = text.count("\n", 0, pos) + 1
        self.colno = pos - text.rfind("\n", 0, pos)
        super().__init__(f"{msg} (line {self.lineno}, column {self.colno})")


try:
    import _json

    _scan: Callable[[str, int], tuple[Any, int]] = _json.make_scanner(_Context())  # type: ignore[arg-type]
    _encode: Callable[[Any, int], Any] = _json.make_encoder(
        None, str, _json.encode_basestring, None, ":", ",", False, False, True
    )
    _encode({"a": [1, 2.5, None, True, "é"]}, 0)  # the signature is the one expected
except (ImportError, AttributeError, TypeError):  # pragma: no cover - another Python
    import json

    def dumps(value: Any) -> str:
        """`value` as compact JSON (non-ASCII kept; what JSON cannot hold, as `str()`)."""
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)

    def loads(text: str) -> Any:
        """The value `text` holds; a DecodeError saying where when it is not JSON."""
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise DecodeError(e.msg, text, e.pos) from None

else:

    def dumps(value: Any) -> str:
        """`value` as compact JSON (non-ASCII kept; what JSON cannot hold, as `str()`)."""
        return "".join(_encode(value, 0))

    def loads(text: str) -> Any:
        """The value `text` holds; a DecodeError saying where when it is not JSON."""
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = _scan(text, start)
        except StopIteration as e:
            raise DecodeError("Expecting value", text, e.value) from None
        except ValueError as e:  # (the scanner's own, a JSONDecodeError: it has `msg`, `pos`)
            msg, pos = getattr(e, "msg", str(e)), getattr(e, "pos", start)
            raise DecodeError(msg, text, pos) from None
        rest = text[end:].lstrip(_WHITESPACE)
        if rest:
            raise DecodeError("Extra data", text, len(text) - len(rest))
        return value
