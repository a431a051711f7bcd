"""A listing reads thousands of sessions that all stay alive: the cyclic collector does not
walk them again and again while it does (`avatar.core.collector`), and is left as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from avatar.core.collector import collector_paused
from avatar.sessions.claude import ClaudeStore
from tests.sessions.synth import populate


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generations of the collections that ran, while the test runs."""
    ran: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            ran.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        yield ran
    finally:
        gc.callbacks.remove(seen)


def test_a_listing_of_a_thousand_sessions_is_walked_by_the_collector_once_at_most(
    tmp_path: Path, collections: list[int]
) -> None:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    synth = populate(tmp_path, 1000, cwd=str(cwd))
    home = tmp_path / "avatar-home"
    assert len(ClaudeStore("claude", synth.env, home).list(cwd)) == 1000  # (fills the cache)
    store = ClaudeStore("claude", synth.env, home)  # (as a command's: the cache read anew)
    assert gc.isenabled()
    gc.collect()  # (every generation's count back to 0: only the listing can start one)
    collections.clear()

    assert len(store.list(cwd)) == 1000

    # At most the one collection of the youngest generation that follows the pause (its
    # objects, walked once); without the pause, one per 700 new objects (six here), and at
    # 10,000 sessions per store older generations' too (a full one among them).
    assert collections in ([], [0])
    assert gc.isenabled()


def test_a_pause_leaves_the_collector_as_it_found_it(collections: list[int]) -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # (the inner pause ended inside the outer)
        raise RuntimeError("a listing that fails")
    assert gc.isenabled()

    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # (it was off before: it stays off)
    finally:
        gc.enable()
