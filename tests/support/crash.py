"""Kill writers at random moments: the loop the crash-safety tests share.

The forking happens in a fresh single-threaded helper process (run with `python -m`), so
each run costs a fork, not an interpreter start.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable, Iterator


def killed_at_random(
    runs: int, seed: int, child: Callable[[int, int], None]
) -> Iterator[list[str]]:
    """Fork `child(out_fd, run)` for run 0 … `runs` - 1, SIGKILL each 2–40 ms later (drawn
    from `seed`), and yield the lines it reported on `out_fd`.

    A child reports each line with one `os.write` of under PIPE_BUF bytes, so a line is
    seen whole or not at all; a last piece without its newline is not reported.
    """
    rng = random.Random(seed)
    for run in range(runs):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                child(w, run)
            finally:
                os._exit(0)
        os.close(w)
        time.sleep(rng.uniform(0.002, 0.04))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        yield data.decode().split("\n")[:-1]
