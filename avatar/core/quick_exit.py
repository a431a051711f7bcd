"""The end of a command's process without Python's teardown of all it loaded."""

from __future__ import annotations

import sys


def exit_now(status: object) -> None:
    """End the process with `status` once the command is done, skipping Python's teardown of
    every module and object it loaded (~4 ms of a one-shot's ~300 modules; its exit is on the
    user's clock: benchmarks/oneshot.py). What code registered to run at exit still runs
    (`atexit`: the native store's last flush among them) and the streams are flushed.

    Returns instead, for the usual exit, while another thread runs (Python's exit would wait
    for it), when a stream cannot be flushed (a closed pipe: the usual exit says so), or for
    a `status` that is not a number."""
    import atexit
    import os
    import threading

    if threading.active_count() > 1 or not (status is None or isinstance(status, int)):
        return
    if not _flushed():
        return
    atexit._run_exitfuncs()  # (what Python's own exit runs, once the threads are done)
    # A stream that fails only now ends the process as Python's own exit then does: with 120.
    os._exit((status or 0) if _flushed() else 120)


def _flushed() -> bool:
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return False
    return True
