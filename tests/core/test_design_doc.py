"""The design lives in the repository (docs/design.md), and every citation of it resolves: the
code, tests and docs cite its sections as `docs/design.md §N`, and each N is a numbered section
there (`.ci/design-citations` rewrites an older `DESIGN §N` to that form)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"


def _sections() -> list[int]:
    return [int(n) for n in re.findall(r"^## (\d+)\. ", DESIGN.read_text(encoding="utf-8"), re.M)]


def _tracked_text() -> dict[str, str]:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    out = {}
    for raw in filter(None, names):
        try:
            out[raw.decode()] = (ROOT / raw.decode()).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def test_the_design_is_numbered_one_to_twelve() -> None:
    assert _sections() == list(range(1, 13))


def test_every_citation_of_the_design_resolves() -> None:
    have = set(_sections())
    cited = 0
    for name, text in _tracked_text().items():
        for m in re.finditer(r"(?:docs/design\.md|DESIGN(?:\.md)?) §(\d+)((?:, §\d+)*)", text):
            numbers = [int(m.group(1)), *map(int, re.findall(r"§(\d+)", m.group(2)))]
            cited += 1
            assert set(numbers) <= have, f"{name}: {m.group(0)} names no section of docs/design.md"
    assert cited > 100  # (the code cites it throughout)
