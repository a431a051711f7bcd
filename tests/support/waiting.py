"""Waiting for something a test expects to happen, never for a time: the deadline is a
liveness bound (a hang fails the test instead of the suite's timeout), not a speed claim."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(predicate: Callable[[], object], timeout: float = 60, what: str = "") -> None:
    """Return once `predicate()` is true; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting: {what}" if what else "timed out"
        time.sleep(0.05)
