"""Each store owns its whole file format, and every caller asks it through the `SessionStore`
contract (issue 21): a store kind avatar does not ship gets import, rename, fork at a message,
archive, restore and delete from one file plus its provider's `store = "module:Class"`; a
store that cannot do one says so by provider; no module outside `avatar/sessions/` branches
on a store's class, and only `avatar/sessions/claude.py` knows Claude Code's file format."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from avatar.core.config import Settings
from avatar.core.errors import NotSupportedError
from avatar.engine.engine import Engine
from avatar.native.store.session_store import NativeStore
from avatar.providers.registry import ProviderSpec
from avatar.sessions.claude import ClaudeStore
from avatar.sessions.codex import CodexStore
from avatar.sessions.gemini import GeminiStore
from avatar.sessions.records import RecordStore
from avatar.sessions.store import ImportCheckError, SessionStore
from avatar.sessions.types import SessionInfo, Transcript, TranscriptMessage
from tests.core.fake_bridge import FakeBridge

AVATAR = Path(__file__).resolve().parents[2] / "avatar"
STORES = Path(__file__).resolve().parents[1] / "fixtures" / "provider-stores"
FAKE = "tests.core.fake_bridge:FakeBridge"
NOTES = "notes-resumable"  # (the fake bridge resumes on a provider named so)


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    project = tmp_path / "project"
    project.mkdir()
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path)}
    e = Engine(Settings(), project, env=env, home=tmp_path / "home")
    e.registry.add(ProviderSpec(name="plain", transport="acp", bridge=FAKE))
    store = "tests.sessions.notes_store:NotesStore"
    e.registry.add(ProviderSpec(name=NOTES, transport="acp", bridge=FAKE, store=store))
    FakeBridge.prompts = []
    return e


async def test_a_new_store_kind_is_one_file_and_a_line_of_provider_data(
    engine: Engine, tmp_path: Path
) -> None:
    notes_dir = tmp_path / "home" / "notes"
    await engine.open("plain")
    [e async for e in engine.send("the parrot is blue")]

    # `/provider notes --import`: the conversation is written in the notes format.
    started = await engine.switch_provider(NOTES, imported=True)
    [path] = notes_dir.glob(f"*/{started.session_id}.jsonl")
    said = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert [(x["role"], x["text"]) for x in said] == [
        ("user", "the parrot is blue"),
        ("assistant", "echo: the parrot is blue"),
    ]
    sid = started.session_id

    engine.rename(sid, "Blue   parrot")
    assert json.loads(path.read_text().splitlines()[-1]) == {"name": "Blue parrot"}
    assert engine.find(sid).name == "Blue parrot"

    fork = await engine.agent.fork(sid, at=1)
    assert fork.how == "forked" and fork.provider == NOTES
    assert [m.text for m in engine.transcript(fork.session_id).messages] == ["the parrot is blue"]
    assert len(list(notes_dir.glob("*/*.jsonl"))) == 2

    archive = engine.library.archives.pack(sid, tmp_path / "parrot.tar.gz")
    await engine.delete(sid)
    assert not path.exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    restored = engine.library.archives.restore(archive, elsewhere)
    assert (restored.id, restored.cwd, restored.messages) == (sid, str(elsewhere), 2)
    [moved] = notes_dir.glob(f"*/{sid}.jsonl")
    assert moved.parent != path.parent and json.loads(moved.read_text().splitlines()[0]) == {
        "cwd": str(elsewhere)
    }


async def test_a_store_that_cannot_says_so_and_the_conversation_is_handed_over(
    engine: Engine,
) -> None:
    engine.registry.add(ProviderSpec(name="bare", transport="acp", bridge=FAKE, store="x:Bare"))
    engine.catalog.use_store("bare", _Bare("bare", {}, engine.home))
    notices: list[str] = []
    engine.subscribe(lambda e: notices.append(getattr(e, "message", "")))
    await engine.open("plain")
    [e async for e in engine.send("the parrot is blue")]
    started = await engine.switch_provider("bare", imported=True)
    assert started.provider == "bare" and started.how == "new"
    assert "bare cannot take an import; handing the conversation over" in notices
    [e async for e in engine.send("and now?")]
    assert "the parrot is blue" in FakeBridge.prompts[-1]  # the handoff opens the prompt


class _Bare(SessionStore):
    """A store that only lists: every optional operation is the default."""

    def list(self, cwd: Path | None) -> list[SessionInfo]:
        return []

    def transcript(self, session_id: str) -> Transcript:
        raise AssertionError("not asked")


def test_every_default_names_the_operation_and_the_provider(tmp_path: Path) -> None:
    bare = _Bare("bare", {}, tmp_path)
    info = SessionInfo("abc", "bare", path=str(tmp_path / "abc"))
    calls = {
        "forking at a message": lambda: bare.fork_at(info, 1),
        "importing a conversation": lambda: bare.write_import(Transcript(info), tmp_path),
        "naming a session": lambda: bare.rename(info, "x"),
        "deleting a session": lambda: bare.delete(info),
        "archiving a session": lambda: bare.archive_files(info),
        "restoring a session": lambda: bare.restore("abc", {}, None, str(tmp_path)),
    }
    for operation, call in calls.items():
        with pytest.raises(NotSupportedError, match=f"^{operation} is not supported by bare$"):
            call()
    # Gemini CLI's files take no fork, import or deletion from avatar (Gemini CLI deletes).
    gemini = GeminiStore("gemini", {"HOME": str(tmp_path)}, tmp_path)
    for call in (
        lambda: gemini.fork_at(info, 1),
        lambda: gemini.write_import(Transcript(info), tmp_path),
        lambda: gemini.delete(info),
    ):
        with pytest.raises(NotSupportedError, match=r"by gemini$"):
            call()


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_an_import_that_does_not_read_back_leaves_nothing(tmp_path: Path, kind: str) -> None:
    # Text the provider itself injects (and its reader leaves out) cannot be imported as said.
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(tmp_path / ".codex")}
    store: SessionStore = (ClaudeStore if kind == "claude" else CodexStore)(kind, env, tmp_path)
    injected = "<system-reminder>" if kind == "claude" else "<environment_context>"
    said = Transcript(
        SessionInfo("src", "other"),
        [
            TranscriptMessage(role="user", text=f"{injected} be brief"),
            TranscriptMessage(role="assistant", text="ok"),
        ],
    )
    with pytest.raises(ImportCheckError, match=f"imported {kind} session .* did not read back"):
        store.write_import(said, tmp_path)
    assert [p for p in tmp_path.rglob("*.jsonl")] == []
    said.messages[0].text = "be brief"
    info = store.write_import(said, tmp_path)
    assert [(m.role, m.text) for m in store.read_transcript(info).messages] == [
        ("user", "be brief"),
        ("assistant", "ok"),
    ]
    assert store.locate(info.id).path == info.path


def test_native_and_records_write_their_own(tmp_path: Path) -> None:
    said = Transcript(SessionInfo("src", "other"), [TranscriptMessage(role="user", text="hi")])
    native = NativeStore("native", {}, tmp_path)
    info = native.write_import(said, tmp_path, "openai/gpt-4o")
    assert native.locate(info.id).path == info.path
    assert [m.text for m in native.transcript(info.id).messages] == ["hi"]
    records = RecordStore("qwen-code", {}, tmp_path)
    assert records.archive_files(info) == []  # avatar's records travel on their own
    with pytest.raises(NotSupportedError):
        records.write_import(said, tmp_path)


def test_claude_rename_and_delete_touch_only_files_of_its_store(tmp_path: Path) -> None:
    shutil.copytree(STORES / "claude", tmp_path / "claude")
    store = ClaudeStore("claude", {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}, tmp_path)
    info = store.list(None)[0]
    store.rename(info, "Named")
    assert ClaudeStore("claude", store.env, tmp_path).locate(info.id).name == "Named"
    stray = tmp_path / f"{info.id}.jsonl"
    stray.write_text("{}\n")
    for call in (store.rename, lambda i, _: store.delete(i)):
        with pytest.raises(Exception, match="is not in Claude Code's store"):
            call(SessionInfo(info.id, "claude", path=str(stray)), "x")
    assert stray.read_text() == "{}\n"


# -- the house rules ---------------------------------------------------------------------------


#: The modules that own a store's file format (where its class is written).
STORE_MODULES = [*(AVATAR / "sessions").glob("*.py"), AVATAR / "native/store/session_store.py"]


def _store_classes() -> set[str]:
    names = {"SessionStore"}
    for path in STORE_MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name) and (b.id in names or b.id.endswith("Store"))
                for b in node.bases
            ):
                names.add(node.name)
    return names


def _names(node: ast.AST) -> set[str]:
    return {
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(node)
        if isinstance(n, ast.Name | ast.Attribute)
    }


def test_no_isinstance_on_a_store_class_outside_sessions() -> None:
    classes = _store_classes()
    assert {"ClaudeStore", "CodexStore", "GeminiStore", "NativeStore", "RecordStore"} <= classes
    found = []
    for path in AVATAR.rglob("*.py"):
        if path in STORE_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2
                and (hit := _names(node.args[1]) & classes)
            ):
                found.append(f"{path.relative_to(AVATAR)}:{node.lineno} {sorted(hit)}")
            if isinstance(node, ast.Name | ast.Attribute) and _names(node) & {
                "kind_of",
                "IMPORTABLE",
            }:
                found.append(f"{path.relative_to(AVATAR)}:{node.lineno} kind_of/IMPORTABLE")
    assert found == []


#: Keys of Claude Code's session files: what only the module owning that format writes or reads.
CLAUDE_FORMAT = {"parentUuid", "isSidechain", "customTitle", "custom-title", "ai-title"}


def test_claude_code_s_file_format_lives_in_one_file() -> None:
    found = []
    for path in AVATAR.rglob("*.py"):
        if path == AVATAR / "sessions" / "claude.py":
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and any(key in node.value for key in CLAUDE_FORMAT)
            ):
                found.append(f"{path.relative_to(AVATAR)}:{node.lineno} {node.value[:40]!r}")
    assert found == []
