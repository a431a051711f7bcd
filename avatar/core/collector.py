"""The cyclic garbage collector paused while a bulk read builds objects that all stay alive."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: for reads that build thousands of objects that
    live on (a listing's sessions, an index's rows), which the collector would walk again and
    again as the heap grows and find nothing to free (~10% of a 40,000-session index build;
    in a cached listing of 30,000 sessions ~40 ms of collections, a full one among them,
    where one walk of ~23 ms follows the pause). The CLI
    pauses it during start-up anyway; this is for the Python API and the server. Nested
    pauses leave it as the outermost found it."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
