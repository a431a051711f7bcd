"""The benchmarks added for issue 14 still run (tiny sizes) and judge their targets."""

from __future__ import annotations

import pytest

from benchmarks import resume, search, server, sessions


def test_growth_rows_judge_linear_and_sub_linear() -> None:
    results = {
        100: {"cold": 1.0, "warm": 1.0},
        1000: {"cold": 10.5, "warm": 10.5},
    }
    rows = sessions.growth_rows(results, (100, 1000), {"cold": "first", "warm": "cached"})
    assert [(r["name"], r["ok"]) for r in rows] == [
        ("growth 100→1,000/provider: first", True),  # linear passes
        ("growth 100→1,000/provider: cached", False),  # a cached listing must grow less
    ]
    assert rows[0]["ratio"] == pytest.approx(10.5)


def test_search_rows_per_size(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = {"cold": 1.0, "warm": 0.2, "floor": 0.15, "engine": 0.01, "touched": 1, "one": 0.1}
    fake |= {"repeat": 0.012, "repeat_code": 0.011}
    figures = {**fake, "started": 0.0}
    monkeypatch.setattr(search, "measured_fresh", lambda module, n, quick: figures)
    rows = search.run(quick=True)
    names = [str(r["name"]) for r in rows]
    assert "search index, first build, 100/provider × 4" in names
    assert "growth 100→1,000/provider: search index first build" in names
    assert all(r["ok"] for r in rows)
    # A slow warm search and an agent started while searching are misses.
    judged = {
        str(r["name"]): r["ok"]
        for r in search.rows_at(1000, {**fake, "warm": 0.4, "started": 1.0, "repeat": 0.5})
    }
    assert judged["engine.search(), one word × 10,000, 1,000/provider × 4"] is False
    assert judged["avatar session search, warm, 1,000/provider × 4"] is False
    assert judged["agent processes started while searching"] is False
    assert judged["search index, first build, 1,000/provider × 4"] is True


@pytest.mark.timeout(60)
def test_resume_measures_time_and_memory() -> None:
    result = resume.measure(40, runs=1)
    assert result["time"] > 0 and result["rss"] > 0 and result["size"] > 0
    rows = resume.rows_of(40, result)
    assert rows[-1]["name"] == "memory the history adds ÷ session file size"
    mb = 1024 * 1024
    sizes = {"time": 1.0, "fresh_time": 0.5, "fresh_rss": 40 * mb, "size": 1 * mb}
    assert resume.rows_of(40, {**sizes, "rss": 45 * mb})[-1]["ok"] is True  # 5× the file
    assert resume.rows_of(40, {**sizes, "rss": 52 * mb})[-1]["ok"] is False  # 12×


def test_server_rows_judge_each_figure_against_its_floor() -> None:
    s = server.Samples()
    s.add("pass", 0.02)
    s.add("floor codex", 0.10)  # the warm floor: 0.02 + 0.10
    s.add("codex", 0.15)  # 1.25×: met
    s.add("codex widths", 0.16)  # 1.33×: missed
    s.add("floor claude", 0.30)
    s.add("claude", 0.30)
    s.add("claude back to back", 0.50, 0.70, 0.60)
    s.add("list", 0.05)
    follow = [[0.13], [0.14], [0.20]]  # the worst, 1.67×: missed
    rows = {str(r["name"]): r for r in server.rows_of(s, ["codex"], True, follow)}
    assert rows["10 back-to-back avatar -p codex chat (server)"]["ok"] is True
    assert rows["10 back-to-back avatar -p codex chat (server)"]["baseline"] == pytest.approx(0.12)
    assert rows["10 back to back, terminal widths alternating"]["ok"] is False
    assert rows["7 back-to-back chat --resume ID follow-ups, worst"]["ok"] is False
    assert rows["warm avatar -p claude chat (server)"]["ok"] is True
    back_to_back = rows["10 back-to-back avatar -p claude chat (server)"]
    assert back_to_back["value"] == pytest.approx(0.60)  # reported beside the floor, no target
    assert back_to_back["ratio"] == pytest.approx(0.60 / 0.32) and back_to_back["ok"] is True
    assert rows["avatar session list (server)"]["ok"] is True


@pytest.mark.timeout(120)
def test_checkpoints_measures_a_record_against_git_status() -> None:
    from benchmarks import checkpoints

    figures = checkpoints.measure(1000, runs=1)
    assert all(figures[k] > 0 for k in ("same", "status", "edited", "status10", "first"))
    assert checkpoints.met(0.15, 0.05) and not checkpoints.met(0.25, 0.05)
    assert checkpoints.met(0.25, 0.15)  # a loaded machine: twice git status
