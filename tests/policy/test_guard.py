"""The process guard (`avatar.policy.kernel.guard`): what avatar started dies with it, and a
clean end (`ProcessGuard.close`, as `avatar serve` ends) ends it all before avatar says so."""

from __future__ import annotations

import subprocess

from avatar.policy.kernel.guard import ProcessGuard
from tests.support.served import alive
from tests.support.waiting import wait_until


def test_close_kills_what_is_watched_and_ends_the_guard() -> None:
    guard = ProcessGuard()
    # A command that left a job behind in its group: the group stays watched.
    leader = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 60 & echo $!; wait"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert leader.stdout is not None
    job = int(leader.stdout.readline())
    guard.watch(leader.pid)
    guardian = guard.pid
    assert guardian is not None and alive(guardian)
    guard.release(leader.pid)  # (someone is left in it: it stays watched)

    guard.close()

    assert leader.wait(5) == -9
    wait_until(lambda: not alive(job), timeout=5)  # (killed: gone a moment later)
    assert not alive(guardian) and guard.pid is None


def test_the_guard_comes_back_after_close() -> None:
    guard = ProcessGuard()
    guard.close()  # (nothing watched yet, no guard: nothing to do)
    assert guard.pid is None
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    guard.watch(sleeper.pid)
    assert guard.pid is not None
    guard.close()
    assert sleeper.wait(5) == -9
