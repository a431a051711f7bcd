"""`read` of a huge file holds a bounded piece of it, never the whole: a 400 MB file of one
line (a minified bundle, a log without newlines) is shown in part, and the note says how to
read on. Measured in a process of its own: its peak memory, before and after the read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from avatar.native.tools.read import ReadTool
from tests.native.test_tools import make_ctx

pytestmark = pytest.mark.timeout(120)

SIZE = 400 * 1024 * 1024
CHILD = """
import asyncio, json, resource, sys
from pathlib import Path
from avatar.native.tools.read import ReadTool
from tests.native.test_tools import make_ctx

ctx = make_ctx(Path(sys.argv[1]))
tool = ReadTool()
asyncio.run(tool({"path": "small.txt"}, ctx))  # everything imported and built first
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
result = asyncio.run(tool({"path": "huge.txt"}, ctx))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"extra_kb": after - before, "output": result.output}))
"""


def test_a_400_mb_line_is_read_in_a_bounded_piece_and_the_note_says_how_to_go_on(
    tmp_path: Path,
) -> None:
    with (tmp_path / "huge.txt").open("wb") as f:
        block = b"0123456789abcdef" * 65536  # 1 MB
        for _ in range(SIZE // len(block)):
            f.write(block)
    (tmp_path / "small.txt").write_text("hi\n")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=100,
        cwd=Path(__file__).parents[2],
    )
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["extra_kb"] < 100 * 1024, report["extra_kb"]
    shown, _, note = report["output"].partition("\n\n")
    assert shown == ("0123456789abcdef" * 3200)  # the first 50 KB of the line
    assert note == (
        "[line 1 is longer than the 50 KB limit; showing its start; "
        "use byte_offset=51200 to read on from there]"
    )


async def test_byte_offset_reads_on_inside_a_long_line_and_never_splits_a_character(
    tmp_path: Path,
) -> None:
    (tmp_path / "wide.txt").write_text("é" * 40000 + "\nnext line\n")  # 80,001 bytes, then 10
    ctx = make_ctx(tmp_path)
    first = await ReadTool()({"path": "wide.txt"}, ctx)
    assert first.output.endswith("use byte_offset=51200 to read on from there]")
    on = await ReadTool()({"path": "wide.txt", "byte_offset": 51200}, ctx)
    assert on.output == "é" * 14400 + "\nnext line"
    odd = await ReadTool()({"path": "wide.txt", "byte_offset": 51201, "limit": 1}, ctx)
    assert odd.output.startswith("é" * 14399 + "\n\n[showing bytes 51202-80001 of 80011")
    assert odd.output.endswith("use byte_offset=80001 to read more]")
    past = await ReadTool()({"path": "wide.txt", "byte_offset": 80011}, ctx)
    assert past.is_error and "past the end" in past.output
