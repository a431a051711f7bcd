"""The kernel probe started ahead (`avatar.policy.kernel.stub.probe_soon`, which a one-shot
calls as it begins to load the walls): the stub is asked at once, its answer is the one
`probe()` gives without it, and where the stub is not built yet nothing is started or built
(building is `probe()`'s, when the walls are needed). Each case runs in a fresh interpreter,
where nothing was probed yet; an audit hook logs the processes started."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_RUN = """
import sys
started = []
sys.addaudithook(lambda e, a: started.append(str(a[1][-1])) if e == "subprocess.Popen" else None)
from avatar.policy.kernel import stub
if sys.argv[1] == "soon":
    stub.probe_soon()
    print("before", started)
    if sys.argv[2:] == ["only"]:
        raise SystemExit
print("probe", stub.probe())
print("after", started)
"""


def _run(*args: str, **env: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _RUN, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return out.stdout.splitlines()


@pytest.mark.skipif(sys.platform != "linux", reason="the stub is for Linux")
def test_the_probe_started_ahead_gives_the_answer_of_a_probe_run_when_asked() -> None:
    _run("now")  # (builds the stub where it is not built yet)
    before, soon, after = _run("soon")
    assert before == "before ['--probe']"  # (started by probe_soon)
    assert after == "after ['--probe']"  # (and not started again)
    assert soon == _run("now")[0]


@pytest.mark.skipif(sys.platform != "linux", reason="the stub is for Linux")
def test_nothing_is_built_or_started_ahead_where_the_stub_is_not_built(tmp_path: Path) -> None:
    where = tmp_path / "stub"
    assert _run("soon", "only", AVATAR_STUB_DIR=str(where)) == ["before []"]
    assert not where.exists() or not list(where.iterdir())


@pytest.mark.skipif(sys.platform != "linux", reason="the stub is for Linux")
def test_the_probe_gives_the_landlock_abi_the_kernel_gives() -> None:
    """`support()` takes Landlock's ABI from the stub's probe (a one-shot loads no ctypes):
    the stub's answer is the kernel's own, which `landlock.abi_version` asks for directly."""
    ask = (
        "from avatar.policy.kernel import landlock, stub\n"
        "from avatar.policy import sandbox\n"
        "print(stub.probe().landlock, landlock.abi_version(), sandbox.support().landlock_abi)"
    )
    out = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, check=True)
    probed, kernel, supported = out.stdout.split()
    assert probed == kernel == supported


@pytest.mark.skipif(sys.platform != "linux", reason="the stub is for Linux")
def test_a_probe_that_could_not_run_costs_no_walls() -> None:
    """A probe that fails (it could not start, or said nothing) leaves Landlock's ABI to the
    kernel: the walls Landlock alone raises stay."""
    ask = (
        "from avatar.policy.kernel import landlock, stub\n"
        "from avatar.policy import sandbox\n"
        "stub.probe = lambda: stub.Probe()\n"
        "found = sandbox.support()\n"
        "print(found.landlock_abi == landlock.abi_version() > 0, found.walls, found.namespaces)"
    )
    out = subprocess.run([sys.executable, "-c", ask], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "False"]
