"""Running one shell command inside a `Sandbox`'s walls, as avatar does (through the exec
stub), for tests of what the walls let through."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from avatar.policy.sandbox import Sandbox, entered


def run_walled(box: Sandbox, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`bash -c COMMAND` in `cwd` inside `box`, with the PATH of the tests and HOME at `cwd`."""
    env = box.env({"PATH": os.environ["PATH"], "HOME": str(cwd)})
    with entered(box, ["bash", "-c", command], env, cwd) as entry:
        return subprocess.run(
            entry.argv,
            cwd=cwd,
            env=env,
            pass_fds=entry.pass_fds,
            capture_output=True,
            text=True,
            timeout=30,
        )
