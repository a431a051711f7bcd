"""`SessionStore.locate` and the `scans` counter: one id or prefix resolved in one walk."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.core.errors import SessionNotFoundError, UsageError
from avatar.native.store.entries import MessageEntry
from avatar.native.store.manager import SessionManager
from avatar.native.store.session_store import NativeStore
from avatar.sessions.store import SessionStore
from tests.sessions.conftest import Homes

CLAUDE = "981aee11-c201-405c-9e0f-b75b96a633f2"
CODEX = "01a20060-f62a-7491-8259-1819edd4db09"
GEMINI = "60ec600d-7ed8-4588-9392-96e38d8cca4e"


def _store(homes: Homes, provider: str) -> SessionStore:
    return {"claude": homes.claude, "codex": homes.codex, "gemini": homes.gemini}[provider]()


@pytest.mark.parametrize(
    ("provider", "sid"), [("claude", CLAUDE), ("codex", CODEX), ("gemini", GEMINI)]
)
def test_locate_resolves_a_prefix_in_one_scan(homes: Homes, provider: str, sid: str) -> None:
    store = _store(homes, provider)
    assert store.scans == 0
    assert store.locate(sid[:13]).id == sid
    assert store.scans == 1
    # A whole id names its file: found without walking the store (at 10,000 sessions a
    # walk took seconds), from the file itself.
    assert store.locate(sid, exact=True).id == sid
    assert store.transcript(sid).info.id == sid
    assert {s.id for s in store.find(sid)} == {sid}
    assert store.scans == 1


@pytest.mark.parametrize(
    ("provider", "sid"), [("claude", CLAUDE), ("codex", CODEX), ("gemini", GEMINI)]
)
def test_a_whole_id_reads_its_own_file_as_the_listing_does(
    homes: Homes, provider: str, sid: str
) -> None:
    if provider == "codex":  # what lies beside the files counts too: codex's thread names
        homes.codex().rename(homes.codex().locate(sid), "Named by codex")
    listed = [s for s in _store(homes, provider).list(None) if s.id == sid]
    store = _store(homes, provider)
    assert store.find(sid) == listed and listed[0].path
    assert store.scans == 0
    if provider == "claude":
        return  # its file name is the id
    # A file named by the id but holding another session is not taken for it.
    path = Path(listed[0].path or "")
    other = "0" * 8 + sid[8:]
    path.write_text(path.read_text().replace(sid, other))
    assert _store(homes, provider).find(sid) == []


@pytest.mark.parametrize("provider", ["claude", "codex", "gemini"])
def test_locate_refuses_what_names_no_single_session(homes: Homes, provider: str) -> None:
    store = _store(homes, provider)
    with pytest.raises(UsageError, match="invalid session id"):
        store.locate("../x")
    assert store.scans == 0  # refused before any walk
    with pytest.raises(SessionNotFoundError):
        store.locate("ffffffff")
    with pytest.raises(SessionNotFoundError):
        store.locate({"claude": CLAUDE, "codex": CODEX, "gemini": GEMINI}[provider][:8], exact=True)


def test_ambiguous_prefix_lists_the_candidates(homes: Homes) -> None:
    with pytest.raises(UsageError, match=r"ambiguous: 01a20060-.*, 01a20060-"):
        homes.codex().locate("01a20060")


def test_native_store_locates_and_counts_its_scans(tmp_path: Path) -> None:
    home = tmp_path / "avatar"
    manager = SessionManager(home)
    ids = []
    for text in ("one", "two"):
        header, writer = manager.create(tmp_path, model="m")
        writer.add(MessageEntry(role="user", text=text))
        writer.close()
        ids.append(header.id)
    store = NativeStore("native", {}, home)
    assert store.locate(ids[1].lower()).id == ids[1]  # native prefixes ignore case
    assert store.scans == 1
    assert store.transcript(ids[0]).messages[0].text == "one"
    assert store.scans == 2
    with pytest.raises(UsageError, match="ambiguous"):
        store.locate(ids[0][:2])
    with pytest.raises(SessionNotFoundError):
        store.transcript(ids[0][:20])
    store.list(None)
    assert store.scans == 5
