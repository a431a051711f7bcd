"""Avatar's copy of the turns survives its writer being killed at any moment: 40 SIGKILLs,
and every message the writer saw written is there, in order, and the copy stays appendable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from avatar.core.errors import SessionNotFoundError
from avatar.sessions.records import SessionRecords
from avatar.sessions.types import SessionInfo

ROOT = Path(__file__).resolve().parents[2]


def test_forty_kills_lose_nothing_written(tmp_path: Path) -> None:
    runs = 40
    out = subprocess.run(
        [sys.executable, "-m", "tests.core.records_crash_child", str(tmp_path), str(runs), "3"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout)
    assert len(results) == runs
    records = SessionRecords(tmp_path)
    total = 0
    for run in results:
        info = SessionInfo(run["id"], "codex")
        try:
            copy = records.transcript(info)
        except SessionNotFoundError:  # killed before its first line
            assert run["written"] == 0
            continue
        assert copy.skipped_lines <= 1  # at most a torn last line
        texts = [m.text.split(" ", 2)[:2] for m in copy.messages]
        assert len(texts) >= run["written"]
        for i, (kind, n) in enumerate(texts):  # in order, none missing
            assert (kind, int(n)) == (("prompt", i) if i % 2 == 0 else ("answer", i))
        total += run["written"]
        records.turn("codex", run["id"], "after the crash", "", [])
        assert records.transcript(info).messages[-1].text == "after the crash"
    assert total > 0
    assert len(records.all()) >= len([r for r in results if r["written"]])
