"""The fake ACP agent's race (`race` in its config, tests/support/acp_agent.py): while a thread
swaps names in the project for symlinks as fast as it can (`renameat2(RENAME_EXCHANGE)`, one
system call, so each name is always something), the agent asks the client to read and write
through those names again and again. A client that checks a path and then opens it by name
reads and writes where the symlinks lead.

Config: `{"pairs": [[name, other], ...], "read": path, "write": path, "tries": n,
"report": file}`. Every distinct text the reads returned is written to `report` (one JSON
list), for the test to look at; the answer counts what was done and refused.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from pathlib import Path
from typing import Any

from acp import RequestError

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def swapping(pairs: list[list[str]], stop: threading.Event) -> threading.Thread:
    """A thread exchanging each pair of names until `stop` is set (ctypes releases the GIL
    during each call, so the swaps go on while the agent waits on the client)."""
    libc = ctypes.CDLL(None, use_errno=True)
    exchange = libc.renameat2
    exchange.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                         ctypes.c_uint)  # fmt: skip
    encoded = [(os.fsencode(a), os.fsencode(b)) for a, b in pairs]

    def run() -> None:
        while not stop.is_set():
            for a, b in encoded:
                for _ in range(64):
                    if exchange(_AT_FDCWD, a, _AT_FDCWD, b, _RENAME_EXCHANGE) != 0:
                        raise OSError(ctypes.get_errno(), "renameat2 failed")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def race(conn: Any, session_id: str, config: dict[str, Any]) -> str:
    """Run the race (see the module docstring); what was done, in a few words."""
    stop = threading.Event()
    thread = swapping(config["pairs"], stop)
    seen: set[str] = set()
    counts = {"read ok": 0, "read refused": 0, "write ok": 0, "write refused": 0}
    try:
        for _ in range(int(config["tries"])):
            try:
                got = await conn.read_text_file(session_id=session_id, path=config["read"])
                seen.add(got.content)
                counts["read ok"] += 1
            except RequestError:
                counts["read refused"] += 1
            try:
                await conn.write_text_file(
                    session_id=session_id, path=config["write"], content="raced\n"
                )
                counts["write ok"] += 1
            except RequestError:
                counts["write refused"] += 1
    finally:
        stop.set()
        thread.join()
    Path(config["report"]).write_text(json.dumps(sorted(seen)))
    return "race: " + ", ".join(f"{n} {what}" for what, n in counts.items())
