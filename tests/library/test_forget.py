"""`session delete --forget` removes only avatar's record of a session, and says so: where the
session is listed from its provider's own files and the provider can delete it (native,
Gemini, Claude Code, codex), forgetting would change nothing anyone sees, so it is refused in
one line naming `session delete`; where the files are gone already, avatar's copy is all
there is, and it goes (issue 31)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.library.helpers import Library, make_library
from tests.support.drive import avatar


@pytest.fixture
def lib(tmp_path: Path) -> Library:
    return make_library(tmp_path, n=1)


def _run(lib: Library, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {
        **lib.synth.env,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "AVATAR_HOME": str(lib.avatar_home),
        "AVATAR_CONFIG": str(lib.root / "no-config.yaml"),
    }
    done = avatar(env, lib.cwd, *args)
    assert done.returncode == code, done.stderr
    return done


def _avatar(lib: Library, *args: str, code: int = 0) -> str:
    return _run(lib, *args, code=code).stderr


def _listed(lib: Library) -> dict[str, dict[str, str]]:
    return {s["id"]: s for s in json.loads(_run(lib, "session", "list", "--json").stdout)}


@pytest.mark.parametrize("provider", ["native", "gemini"])
def test_forget_where_the_provider_deletes_is_refused(lib: Library, provider: str) -> None:
    if provider == "native":
        sid = lib.native_session("the otter notes")
    else:
        [sid] = [s.id for s in lib.engine().sessions("gemini")]
    _avatar(lib, "session", "rename", sid, "Otter", "notes")

    said = _avatar(lib, "session", "delete", sid, "--yes", "--forget", code=2)
    [line] = said.splitlines()
    assert line.startswith(f"avatar: --forget would change nothing: {provider} session {sid}")
    assert line.endswith(f"`avatar session delete {sid}` deletes it there")
    assert _listed(lib)[sid]["name"] == "Otter notes"  # avatar's record is whole


def test_forget_where_the_files_are_gone_says_so(lib: Library) -> None:
    sid = lib.claude_session("the heron count")
    engine = lib.engine()  # avatar opened it once: it keeps a record, and a copy of its turns
    catalog = engine.library.catalog
    catalog.opened("claude", sid, str(lib.cwd), None)
    catalog.records().seed("claude", sid, engine.transcript(sid).messages)
    (lib.claude_dir() / f"{sid}.jsonl").unlink()
    assert _listed(lib)[sid].get("files_gone") is True

    said = _avatar(lib, "session", "delete", sid, "--yes", "--forget")
    assert said == (
        f"forgot claude session {sid}: avatar's record and copy of its turns went; "
        "claude's own files of it were gone already\n"
    )
    assert sid not in _listed(lib)
