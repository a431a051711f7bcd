"""Search from inside an agent's walls (docs/design.md §10, §12): `avatar mcp`, started by an
agent avatar runs, reads avatar's data but may not write it. The search index on disk is then
read, never written: searched from a copy in memory that reads again only the sessions that
changed since, not every one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from avatar.policy.sandbox import Sandbox, entered
from tests.library.helpers import make_library

COUNT = (
    "from pathlib import Path\n"
    "from avatar.core.config import Settings\n"
    "from avatar.engine.engine import Engine\n"
    "engine = Engine(Settings(), Path.cwd())\n"
    "print(engine.library.reindex())\n"
    "print([h.session.id for h in engine.library.search('otter')])\n"
)


def test_a_walled_search_starts_from_the_index_it_cannot_write(tmp_path: Path) -> None:
    lib = make_library(tmp_path, n=2)
    env = {**lib.synth.env, "AVATAR_HOME": str(lib.avatar_home), "PATH": os.environ["PATH"]}
    env["AVATAR_CONFIG"] = str(tmp_path / "no-config.yaml")
    every = subprocess.run(
        [sys.executable, "-c", COUNT], env=env, cwd=lib.cwd, capture_output=True, text=True
    )
    assert every.returncode == 0, every.stderr
    assert int(every.stdout.split()[0]) >= 6  # (the first build reads every session)
    index = lib.avatar_home / "cache" / "search.sqlite"
    before = index.read_bytes()
    new = lib.claude_session("the otter census")

    box = Sandbox("agent", lib.cwd, home=Path(env["HOME"]))  # (writes in the project only)
    walled = box.env(env)
    with entered(box, [sys.executable, "-c", COUNT], walled, lib.cwd) as entry:
        done = subprocess.run(
            entry.argv,
            env=walled,
            cwd=lib.cwd,
            pass_fds=entry.pass_fds,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    count, found = done.stdout.splitlines()
    assert count == "1" and found == f"['{new}']"
    assert index.read_bytes() == before
