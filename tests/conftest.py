"""Shared fixtures: the fake model server, a fake HOME for the agent CLIs, the avatar env.

The logic lives in :mod:`tests.support`; this file only wires it into pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.homes import AgentHome
from tests.support.homes import avatar_env as build_avatar_env
from tests.support.model_server import FakeModelServer


@pytest.fixture(autouse=True, scope="session")
def _private_avatar_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Code run inside the test process writes under a throwaway `$AVATAR_HOME`, never the
    user's (the provider table's cache, for one, is written wherever `avatar_home()` is)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AVATAR_HOME", str(tmp_path_factory.mktemp("avatar-home")))
        yield


@pytest.fixture
def model_server() -> Iterator[FakeModelServer]:
    """A fresh :class:`FakeModelServer` per test (starting one takes about a millisecond)."""
    with FakeModelServer() as server:
        yield server


@pytest.fixture
def agent_home(tmp_path: Path, model_server: FakeModelServer) -> AgentHome:
    """A fake HOME under ``tmp_path`` whose ``.env`` runs every agent CLI against the server."""
    return AgentHome(tmp_path / "agent", model_server)


@pytest.fixture
def avatar_env(agent_home: AgentHome) -> dict[str, str]:
    """Environment for running ``avatar`` in a subprocess (temp AVATAR_HOME, no config)."""
    return build_avatar_env(agent_home)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first: the slow ones (stress, memory, kills: minutes each), then
    those driving real agents, then the unit tests, which fill the end, so that no worker runs
    the last long module while the others wait. (pyproject's `--no-loadscope-reorder` keeps
    this order: xdist would otherwise put the modules with the most tests first, and the
    slow ones, a test or two each, last.) Within each group the order is the collection's."""

    def group(item: pytest.Item) -> int:
        if item.get_closest_marker("slow") is not None:
            return 0
        return 1 if item.get_closest_marker("integration") is not None else 2

    items.sort(key=group)


@pytest.hookimpl(optionalhook=True)  # the oldest-Python run in .ci/run has no xdist
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: a worker per core and one more (pyproject caps it at four). Most tests wait
    on agent processes, so one worker per core left the cores idle: on two cores the suite
    took 13:12 with two workers and 9:59 with three, the cores 88% busy. As xdist's own,
    `PYTEST_XDIST_AUTO_NUM_WORKERS` overrides it."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # (xdist's own hook reads it)
    return len(os.sched_getaffinity(0)) + 1
