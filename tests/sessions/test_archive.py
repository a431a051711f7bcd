"""`session export --archive` / `session import` on the files the real CLIs wrote (the fixture
stores), and the archive checks: unsafe members, newer formats, damaged files, overwrites.

What is rewritten for the new project is checked in the restored files themselves (the
real-CLI round trip, resume included, is `tests/integration/test_session_moves.py`).
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.support.drive import avatar
from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer

STORES = Path(__file__).resolve().parents[1] / "fixtures" / "provider-stores"
GEMINI_ID = "60ec600d-7ed8-4588-9392-96e38d8cca4e"
CODEX_ID = "01a20060-c343-7803-adb4-a803ecb21b39"


@pytest.fixture
def source(agent_home: AgentHome) -> dict[str, str]:
    """A HOME holding the fixture gemini and codex stores."""
    shutil.copytree(STORES / "gemini", agent_home.gemini_dir, dirs_exist_ok=True)
    shutil.copytree(STORES / "codex", agent_home.codex_home, dirs_exist_ok=True)  # type: ignore[arg-type]
    return avatar_env(agent_home)


@pytest.fixture
def target(tmp_path: Path, model_server: FakeModelServer) -> tuple[dict[str, str], Path]:
    """Another machine's env, and a project directory there."""
    home = AgentHome(tmp_path / "other", model_server)
    project = home.workdir / "new place"
    project.mkdir()
    return avatar_env(home), project


def pack(env: dict[str, str], cwd: Path, sid: str, archive: Path) -> None:
    p = avatar(env, cwd, "session", "export", sid, "--archive", str(archive))
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("packed ")


def test_gemini_session_moves_to_a_new_project(
    tmp_path: Path, source: dict[str, str], target: tuple[dict[str, str], Path]
) -> None:
    archive = tmp_path / "g.tar.gz"
    # A key variable's value is masked wherever the session files hold it.
    pack({**source, "MY_API_TOKEN": "Hello from the fake LLM"}, tmp_path, GEMINI_ID[:8], archive)
    with tarfile.open(archive) as tar:
        packed = [tar.extractfile(m).read() for m in tar if m.isfile()]  # type: ignore[union-attr]
    assert not [p for p in packed if b"Hello from the fake LLM" in p]
    env, project = target
    p = avatar(env, project, "session", "import", str(archive))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == GEMINI_ID
    listed = json.loads(avatar(env, project, "session", "list", "--json").stdout)
    assert [(r["provider"], r["id"], r["cwd"]) for r in listed] == [
        ("gemini", GEMINI_ID, str(project))
    ]
    gemini = Path(env["HOME"]) / ".gemini"
    short = json.loads((gemini / "projects.json").read_text())["projects"][str(project)]
    assert (gemini / "tmp" / short / ".project_root").read_text() == str(project)
    restored = next((gemini / "tmp" / short / "chats").glob("session-*.jsonl"))
    assert b"[redacted]." in restored.read_bytes()
    first = json.loads(restored.read_bytes().splitlines()[0])
    assert first["projectHash"] == hashlib.sha256(str(project).encode()).hexdigest()
    shown = avatar(env, project, "session", "show", GEMINI_ID)
    assert shown.returncode == 0 and "── 1. you" in shown.stdout


def test_codex_rollout_cwd_is_rewritten(
    tmp_path: Path, source: dict[str, str], target: tuple[dict[str, str], Path]
) -> None:
    archive = tmp_path / "c.tar.gz"
    pack(source, tmp_path, CODEX_ID, archive)
    env, project = target
    assert avatar(env, project, "session", "import", str(archive)).returncode == 0
    rollout = next(Path(env["HOME"], ".codex", "sessions").rglob(f"rollout-*{CODEX_ID}.jsonl"))
    assert rollout.parent.relative_to(Path(env["HOME"], ".codex", "sessions")).parts == (
        "2026",
        "11",
        "21",
    )
    kinds = {}
    for line in rollout.read_bytes().splitlines():
        entry = json.loads(line)
        if entry.get("type") in ("session_meta", "turn_context"):
            kinds[entry["type"]] = entry["payload"]["cwd"]
    assert kinds == {"session_meta": str(project), "turn_context": str(project)}
    assert "/home/dev/proj" not in rollout.read_text().split("base_instructions")[0]


def _archive(path: Path, members: dict[str, bytes], *, kind: str = "reg") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if kind == "symlink" and name != "manifest.json":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
                continue
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


MANIFEST = {
    "format": 1,
    "kind": "native",
    "provider": "native",
    "cwd": "/somewhere",
    "session": {"id": "01JAAAAAAAAAAAAAAAAAAAAAAA"},
}


@pytest.mark.parametrize(
    ("members", "kind", "message"),
    [
        ({"manifest.json": MANIFEST, "/etc/evil": b"x"}, "reg", "unsafe member name"),
        ({"manifest.json": MANIFEST, "session/../../evil": b"x"}, "reg", "unsafe member name"),
        ({"manifest.json": MANIFEST, "session/x.jsonl": b"x"}, "symlink", "unexpected member"),
        ({"manifest.json": MANIFEST, "elsewhere.txt": b"x"}, "reg", "unexpected member"),
        ({"manifest.json": MANIFEST, "session/x.jsonl": b"x"}, "reg", "not a file of native"),
        ({"manifest.json": {**MANIFEST, "format": 2}}, "reg", "format 2, newer than"),
        ({"manifest.json": b"{not json"}, "reg", "manifest.json is damaged"),
        ({"session/x.jsonl": b"x"}, "reg", "no manifest.json"),
    ],
)
def test_bad_archives_are_refused_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    members: dict[str, object],
    kind: str,
    message: str,
) -> None:
    raw = {k: v if isinstance(v, bytes) else json.dumps(v).encode() for k, v in members.items()}
    archive = _archive(tmp_path / "bad.tar.gz", raw, kind=kind)
    home = in_process_home(tmp_path, monkeypatch)
    assert run_cli("-C", str(tmp_path), "session", "import", str(archive)) == 2
    err = capsys.readouterr().err
    assert err.startswith("avatar: ") and err.count("\n") == 1
    assert message in err
    assert not (home / "sessions").exists()
    assert not (tmp_path / "evil").exists()


def test_not_an_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    in_process_home(tmp_path, monkeypatch)
    junk = tmp_path / "junk.tar.gz"
    junk.write_text("hello")
    assert run_cli("-C", str(tmp_path), "session", "import", str(junk)) == 2
    assert "is not a session archive" in capsys.readouterr().err
    assert run_cli("-C", str(tmp_path), "session", "import", str(tmp_path / "gone.tgz")) == 2
    assert "no such archive" in capsys.readouterr().err


def in_process_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """AVATAR_HOME, HOME and config for running the CLI inside the test process."""
    home = tmp_path / "avatar-home"
    monkeypatch.setenv("AVATAR_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("AVATAR_CONFIG", str(tmp_path / "no-config.yaml"))
    return home


def run_cli(*args: str) -> int:
    """The CLI's exit code, run in this process (its one-line errors go to stderr)."""
    from avatar.cli.commands import run

    with pytest.raises(SystemExit) as done:
        run(list(args))
    return int(done.value.code or 0)
