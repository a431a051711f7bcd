"""Unknown agents just work (issue 31): the README's "any ACP agent" example,
`providers: {NAME: {transport: acp, command: [AGENT]}}`, run through the real `avatar` command
under the default walls, with an agent avatar has no data for — the fake ACP agent of the test
kit installed as a program of its own (`acp_agent.program`).

An agent that keeps its state in a conventional home of its name or of its program's
(`~/.NAME/`, NAME under an XDG home) works with no more config; one that keeps it elsewhere
fails with one line naming the path its walls refused and the key that opens it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_agent import program
from tests.support.drive import Avatar
from tests.support.homes import AgentHome, avatar_env

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


def _avatar(home: AgentHome, name: str, agent: str, config: dict[str, object]) -> Avatar:
    """avatar with `agent` (a program on PATH running the fake agent with `config`) configured
    as the README says: provider `name`, `{transport: acp, command: [agent]}`, nothing else."""
    env = avatar_env(home)
    bin_dir = home.root / "bin"
    bin_dir.mkdir(exist_ok=True)
    program(bin_dir / agent, config)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    entry = {"transport": "acp", "command": [agent]}
    Path(env["AVATAR_CONFIG"]).write_text(json.dumps({"providers": {name: entry}}))
    return Avatar(home, env, timeout=120)


@pytest.mark.parametrize(
    ("name", "agent", "state"),
    [
        ("heron", "heron", "~/.heron"),  # its name's home
        ("heron", "heron", "~/.local/share/heron"),  # its name under XDG_DATA_HOME
        ("my-agent", "pi-acp", "~/.pi"),  # the program an ACP adapter runs (the README's)
    ],
)
def test_an_agent_keeping_its_state_in_its_own_home_just_works(
    agent_home: AgentHome, name: str, agent: str, state: str
) -> None:
    avatar = _avatar(agent_home, name, agent, {"state_dir": f"{state}/store", "load": True})
    first = avatar("-p", name, "chat", "remember PELICAN")
    sid = avatar.session(first)[0]
    assert "reply 1 to 'remember PELICAN' (history 0)" in first.stdout
    kept = Path(state.replace("~", str(agent_home.home), 1)) / "store" / "sessions"
    assert (kept / f"{sid}.json").is_file()

    # Reopened by the full ACP bridge: the agent reads back what it wrote in its home.
    again = avatar("chat", "--resume", sid[:8], "which word?")
    assert avatar.session(again) == (sid, name, "loaded")
    assert "reply 2 to 'which word?' (history 2)" in again.stdout

    # The homes avatar made for the guess and the agent left empty are gone again.
    left = [p for p in agent_home.home.rglob("*") if p.is_dir() and not any(p.iterdir())]
    assert not [p for p in left if p.name in (name, agent, "pi")]


def test_providers_show_the_guessed_homes(agent_home: AgentHome) -> None:
    avatar = _avatar(agent_home, "heron", "heron-acp", {})
    rows = {r["name"]: r for r in json.loads(avatar("providers", "--json").stdout)}
    home = agent_home.home
    assert rows["heron"]["sandbox"] == "agent (guessed state_dirs)"
    assert rows["heron"]["state_guessed"] is True
    assert str(home / ".heron") in rows["heron"]["state_dirs"]
    assert str(home / ".config" / "heron-acp") in rows["heron"]["state_dirs"]
    assert rows["codex"]["state_guessed"] is False
    table = avatar("providers").stdout
    assert "heron: ~/.heron, ~/.config/heron, ~/.local/share/heron" in table


@pytest.mark.parametrize(
    ("lazy", "args"),
    [
        (False, ["chat", "hello"]),
        (True, ["chat", "hello"]),
        (True, ["chat", "--continue", "hello"]),
    ],
    ids=["dies-at-start", "refuses-session-new", "refuses-session-new-full-bridge"],
)
def test_an_agent_keeping_its_state_elsewhere_is_told_the_path_and_the_key(
    agent_home: AgentHome, lazy: bool, args: list[str]
) -> None:
    # Dying at start, its OS error is only on its stderr; refusing session/new (on the one-shot
    # bridge, or the full one that `--continue` takes), it answers "Internal error: Cannot call
    # write after a stream was destroyed", as the issue saw.
    config = {"state_dir": "~/heron-data", "lazy_state": lazy, "list": True, "load": True}
    avatar = _avatar(agent_home, "heron", "heron", config)
    failed = avatar("-p", "heron", *args, code=1)
    lines = failed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("avatar: heron"), failed.stderr
    assert f"{agent_home.home / 'heron-data'}: it is outside its walls" in lines[0]
    assert "(add it to providers.heron.state_dirs)" in lines[0]
    assert not (agent_home.home / "heron-data").exists()
