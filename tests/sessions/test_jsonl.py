"""The tolerant JSONL helpers every store shares."""

from __future__ import annotations

import io
import re
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from avatar.sessions.jsonl import (
    LineStats,
    blocks_text,
    is_injected,
    iter_raw_lines,
    iter_records,
    parse_line,
    parse_time,
    read_records,
    title_from,
)


def records(data: bytes, **kw: object) -> tuple[list[dict], LineStats]:
    stats = LineStats()
    out = list(iter_records(io.BytesIO(data), stats, **kw))  # type: ignore[arg-type]
    return out, stats


def test_good_lines_blank_lines_and_crlf() -> None:
    out, stats = records(b'{"a":1}\n\n  \n{"b":2}\r\n{"c":3}')
    assert out == [{"a": 1}, {"b": 2}, {"c": 3}]
    assert stats.skipped == 0


@pytest.mark.parametrize(
    "bad",
    [
        b"{not json}",
        b"[1, 2]",  # valid JSON, not an object
        b'"text"',
        b'{"a":1} trailing',
        b"\xff\xfe\x00binary\x00",
        b'{"torn": "li',  # a crash mid-write
    ],
)
def test_broken_lines_are_counted_and_skipped(bad: bytes) -> None:
    out, stats = records(b'{"a":1}\n' + bad + b'\n{"b":2}\n')
    assert out == [{"a": 1}, {"b": 2}]
    assert stats.broken == 1
    assert stats.where == [2]
    warning = stats.warning("f.jsonl")
    assert warning is not None and "f.jsonl" in warning and "line 2" in warning


def test_torn_last_line_is_skipped() -> None:
    out, stats = records(b'{"a":1}\n{"b":')
    assert out == [{"a": 1}]
    assert stats.broken == 1


def test_oversized_line_is_skipped_without_holding_it(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as f:
        f.write(b'{"a":1}\n{"blob":"')
        chunk = b"x" * (1 << 20)
        for _ in range(50):  # a single 50 MB line
            f.write(chunk)
        f.write(b'"}\n{"b":2}\n')
    stats = LineStats()
    tracemalloc.start()
    try:
        with big.open("rb") as f:
            out = list(iter_records(f, stats, max_line=1 << 20))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out == [{"a": 1}, {"b": 2}]
    assert stats.oversized == 1
    assert peak < 8 << 20  # never anywhere near the line's 50 MB
    assert "oversized" in (stats.warning(big) or "")


def test_line_exactly_at_the_cap_is_kept() -> None:
    line = b'{"k":"' + b"x" * 10 + b'"}'
    stats = LineStats()
    out = list(iter_raw_lines(io.BytesIO(line + b"\n"), len(line) + 1, stats))
    assert [x for _, x in out] == [line + b"\n"]
    out = list(iter_raw_lines(io.BytesIO(line + b"\n"), len(line) - 1, stats))
    assert out == [] and stats.oversized == 1


def test_prefilter_skips_unwanted_lines_unparsed() -> None:
    data = b'{"type":"keep"}\n{"type":"drop", broken\n{"type":"keep","n":2}\n\x00bin\n'
    out, stats = records(data, want=re.compile(rb'"type":"keep"'))
    assert out == [{"type": "keep"}, {"type": "keep", "n": 2}]
    assert stats.skipped == 1  # the binary line; the broken object was never looked at


def test_custom_parser() -> None:
    out, _ = records(b'{"a":1}\n', parse=lambda line: {"len": len(line)})
    assert out == [{"len": 8}]


def test_parse_line() -> None:
    assert parse_line(b'  {"a": [1, {"b": null}]}  \n') == {"a": [1, {"b": None}]}
    assert parse_line(b"") is None
    assert parse_line(b"{}{}") is None
    assert parse_line('{"é":"ü"}'.encode()) == {"é": "ü"}


def test_read_records(tmp_path: Path) -> None:
    p = tmp_path / "f.jsonl"
    p.write_bytes(b"".join(b'{"n":%d}\n' % i for i in range(1000)))
    recs, stats = read_records(p)
    assert len(recs) == 1000 and stats.skipped == 0
    assert recs[-1] == {"n": 999}
    with pytest.raises(OSError):
        read_records(tmp_path / "missing.jsonl")


def test_parse_time() -> None:
    want = datetime(2026, 11, 21, 23, 9, 38, 12000, tzinfo=UTC)
    assert parse_time("2026-11-21T23:09:38.012Z") == want
    assert parse_time("2026-11-21T23:09:38.012+00:00") == want
    assert parse_time("2026-11-22T00:09:38.012+01:00") == want
    assert parse_time("2026-11-21T23:09:38.012") == want  # naive → UTC
    assert parse_time(1795302671) == datetime.fromtimestamp(1795302671, tz=UTC)
    assert parse_time(1795302671232) == datetime.fromtimestamp(1795302671.232, tz=UTC)
    for bad in (None, "", "yesterday", True, [], {}, 10**30):
        assert parse_time(bad) is None


def test_title_from() -> None:
    assert title_from("  fix\n the   bug  ") == "fix the bug"
    assert title_from("") is None and title_from(None) is None and title_from(" \n ") is None
    long = title_from("word " * 100)
    assert long is not None and len(long) == 100 and long.endswith("…")


def test_is_injected() -> None:
    prefixes = ("<session_context>", "/")
    assert is_injected("  <session_context>\nstuff", prefixes)
    assert is_injected("/help", prefixes)
    assert is_injected("   ", prefixes)
    assert not is_injected("hello <session_context>", prefixes)


def test_blocks_text() -> None:
    assert blocks_text("plain") == "plain"
    assert blocks_text([{"type": "text", "text": "a"}, {"type": "image"}, "b"]) == "a\nb"
    assert blocks_text([{"type": "input_text", "text": "x"}, {"text": "y"}]) == "x\ny"
    assert blocks_text([{"type": "output_text", "text": "x"}], kinds=("output_text",)) == "x"
    assert blocks_text(None) == "" and blocks_text(42) == ""
