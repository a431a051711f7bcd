"""`avatar session search` as typed (issue 31): a flag it does not know is a token to search
for, as it is after `--`; an `--offset` past the last match says how many there are."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.library.helpers import Library, make_library
from tests.support.drive import avatar


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    return make_library(tmp_path, n=1)


def _search(lib: Library, *args: str) -> tuple[str, str]:
    env = {
        **lib.synth.env,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
    }
    done = avatar(env, lib.cwd, "session", "search", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_a_flag_is_a_token_to_search_for(lib: Library) -> None:
    sid = lib.claude_session("run the migration with --dry-run first")
    for args in (("--dry-run",), ("--", "--dry-run"), ("migration", "--dry-run")):
        out, _ = _search(lib, *args)
        assert sid in out and "--dry-run" in out, args
    out, err = _search(lib, "--no-such-words")
    assert out == "" and err.startswith("no session matches '--no-such-words'")


def test_an_offset_past_the_last_match_says_how_many_there_are(lib: Library) -> None:
    lib.claude_session("the pangolin report")
    lib.claude_session("the pangolin census")
    out, err = _search(lib, "pangolin", "--offset", "5")
    assert out == ""
    assert err == (
        f"--offset 5 is past the last match: 2 sessions match 'pangolin' in {lib.cwd} "
        "(--all-projects: everywhere)\n"
    )
    out, _ = _search(lib, "pangolin", "--offset", "1")
    assert len([line for line in out.splitlines() if not line.startswith(" ")]) == 1
