"""The session-listing benchmark still runs (tiny sizes): rows, no agent started."""

from __future__ import annotations

import pytest

from benchmarks import sessions


@pytest.mark.timeout(120)
def test_measure_small_store() -> None:
    result = sessions.measure(20, quick=True)
    assert set(result) == {"cold", "warm", "cli_first", "cli_warm", "show", "started"}
    assert result["started"] == 0
    assert all(v > 0 for k, v in result.items() if k != "started")


def test_rows_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = {"cold": 0.3, "warm": 0.1, "cli_first": 0.6, "cli_warm": 0.4, "started": 0.0}
    shows = {100: 0.1, 1000: 0.25}  # `session show FULL_ID`: 2.5× the time at 100 is a miss
    monkeypatch.setattr(sessions, "measure", lambda n, quick: {**fake, "show": shows[n]})
    monkeypatch.setattr(sessions, "cli_floor", lambda quick: 0.3)
    rows = sessions.run(quick=True)
    assert all(set(r) >= {"name", "value", "baseline", "ratio", "target", "ok"} for r in rows)
    targeted = [r for r in rows if r["target"] == "< 0.5 s"]
    assert [r["name"] for r in targeted] == [
        "stores list(), cached, 1,000/provider",
        "avatar session list --all, 1,000/provider",
    ]
    assert rows[-1]["name"] == "agent processes started while listing" and rows[-1]["ok"]
    show = {str(r["name"]): r["ok"] for r in rows if "show FULL_ID" in str(r["name"])}
    assert show == {
        "avatar session show FULL_ID, 100/provider": True,
        "avatar session show FULL_ID, 1,000/provider": False,
    }
