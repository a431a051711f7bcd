"""avatar's ACP file callbacks cannot be raced (issue 30): a walled agent (the fake ACP agent,
inside its walls as every agent) swaps a directory of the project for a symlink in a loop —
`renameat2(RENAME_EXCHANGE)` — while it asks avatar, 600 times each, to read and write through
that directory. avatar runs outside the walls: had it checked the path and then opened it by
name, it would have read the denied `.env` and written outside the project. Nothing outside
changes, `.env` is never read, and the reads and writes that were not raced still work.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.acp_agent import provider_entry
from tests.support.drive import avatar
from tests.support.homes import AgentHome

pytestmark = pytest.mark.timeout(300)

TRIES = 600
DOTENV = "DOTENV-SECRET-3e9b"


def test_a_symlink_swapped_in_a_loop_takes_avatar_nowhere(
    agent_home: AgentHome, avatar_env: dict[str, str], tmp_path: Path
) -> None:
    work = agent_home.workdir
    outside = tmp_path / "outside"
    outside.mkdir()
    (work / ".env").write_text(f"TOKEN={DOTENV}\n")
    # Reads go through `r/note`: a directory holding an ordinary note, or (swapped) a symlink
    # to `trap`, whose `note` is a symlink to `.env`.
    (work / "r").mkdir()
    (work / "r" / "note").write_text("an ordinary note\n")
    (work / "trap").mkdir()
    (work / "trap" / "note").symlink_to("../.env")
    (work / "r-swap").symlink_to("trap")
    # Writes go through `w/new.txt`: a directory of the project, or (swapped) a symlink to
    # the directory outside.
    (work / "w").mkdir()
    (work / "w-swap").symlink_to(outside)
    state = tmp_path / "fake-state"
    report = state / "reads.json"
    race = {
        "pairs": [[str(work / "r"), str(work / "r-swap")], [str(work / "w"), str(work / "w-swap")]],
        "read": str(work / "r" / "note"),
        "write": str(work / "w" / "new.txt"),
        "tries": TRIES,
        "report": str(report),
    }
    fake = provider_entry(state, race=race)
    Path(avatar_env["AVATAR_CONFIG"]).write_text(json.dumps({"providers": {"fake": fake}}))
    run = avatar(avatar_env, work, "-p", "fake", "chat", "--permission", "allow", "go",
                 timeout=240)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert os.listdir(outside) == []  # nothing written outside the project
    got = json.loads(report.read_text())
    assert not [text for text in got if DOTENV in text]  # `.env` never read
    # What was not raced still works (the agent's report in its answer).
    assert got == ["an ordinary note\n"], got
    done = {what: int(n) for n, what in _counts(run.stdout)}
    assert done["read ok"] > 0 and done["write ok"] > 0, run.stdout
    assert sum(done.values()) == 2 * TRIES


def _counts(answer: str) -> list[tuple[str, str]]:
    race = answer[answer.index("race: ") + 6 :].split("]")[0]
    return [tuple(part.strip().split(" ", 1)) for part in race.split(",")]  # type: ignore[misc]
