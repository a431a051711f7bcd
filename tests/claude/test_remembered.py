"""A launch remembered (`avatar.bridges.claude.remembered`): started from memory only while
every input it names is as it was, the environment the same and the place the same; never
from a record of another format or avatar; and what it starts is exactly what was remembered.

A harmless program stands in for claude here (`sh` reading its stdin): what is tested is the
record and its checks. tests/integration/test_claude_remembered.py runs the real claude."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from avatar.bridges.claude import remembered

PROGRAM = ["/bin/sh", "-c", "cat >/dev/null", "--session-id", "the-session"]


@pytest.fixture
def place(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    home, cwd = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    cwd.mkdir()
    yield home, cwd
    remembered.discard()


def _remember(
    home: Path,
    cwd: Path,
    inputs: list[str],
    env: dict[str, str] | None = None,
    provider: str = "claude",
) -> None:
    env = dict(os.environ) if env is None else env
    remembered.remember(home, "", cwd, inputs, PROGRAM, env, None, None, "", provider=provider)


def _started(home: Path, cwd: Path) -> remembered.Early | None:
    remembered.start(str(home), str(cwd), "")
    early = remembered.take("claude")
    if early is not None:
        early.stop()
        os.close(early.lock)
    return early


def test_it_starts_what_was_remembered_while_nothing_changed(place: tuple[Path, Path]) -> None:
    home, cwd = place
    config = cwd / "config.yaml"
    config.write_text("a: 1\n")
    _remember(home, cwd, [str(config), str(cwd / "absent")])
    early = _started(home, cwd)
    assert early is not None
    assert early.argv[:4] == PROGRAM[:4] and early.argv[4] != "the-session"  # (a new session)
    assert early.cwd == str(cwd) and early.spec is None
    assert _started(home, cwd) is not None  # (and again)


@pytest.mark.parametrize(
    "change",
    [
        "rewrite",  # the same size, another content
        "touch back",  # written, then its times set back as they were: its ctime says so
        "appear",  # a file where none was (a repository's agent config, say)
        "remove",
        "environment",
        "place",
    ],
)
def test_any_change_to_what_it_was_computed_from_starts_nothing(
    place: tuple[Path, Path], change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, cwd = place
    config, absent = cwd / "config.yaml", cwd / ".mcp.json"
    config.write_text("a: 1\n")
    _remember(home, cwd, [str(config), str(absent)])
    before = config.stat()
    if change == "rewrite":
        config.write_text("a: 2\n")
    elif change == "touch back":
        config.write_text("b: 1\n")
        os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif change == "appear":
        absent.write_text("{}")
    elif change == "remove":
        config.unlink()
    elif change == "environment":
        monkeypatch.setenv("SOMETHING_NEW", "1")
    elif change == "place":
        other = cwd / "sub"
        other.mkdir()
        cwd = other
    assert _started(home, cwd) is None


def test_nothing_derived_from_a_secret_is_written(
    place: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key's value changing keeps the record (the claude started from memory takes the
    environment it starts in): the record holds nothing that depends on it."""
    home, cwd = place
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-first-key-0123456789")
    _remember(home, cwd, [])
    written = Path(remembered.place(home, cwd, "")).read_text()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-other-key-9876543210")
    _remember(home, cwd, [])
    assert Path(remembered.place(home, cwd, "")).read_text() == written
    assert "sk-ant" not in written
    early = _started(home, cwd)
    assert early is not None and early.env["ANTHROPIC_API_KEY"] == "sk-ant-other-key-9876543210"


def test_a_record_of_another_avatar_or_format_or_a_damaged_one_starts_nothing(
    place: tuple[Path, Path],
) -> None:
    home, cwd = place
    _remember(home, cwd, [])
    path = Path(remembered.place(home, cwd, ""))
    record = json.loads(path.read_text())
    for key, value in (("version", "0.0.0"), ("format", 0), ("boot", "another boot")):
        path.write_text(json.dumps({**record, key: value}))
        assert _started(home, cwd) is None
    path.write_text("{not json")
    assert _started(home, cwd) is None
    path.write_text(json.dumps(record))
    assert _started(home, cwd) is not None


def test_what_changes_with_each_start_is_not_remembered(place: tuple[Path, Path]) -> None:
    """The session id, the temp dir and avatar's pid stand in the record as placeholders; the
    environment is recorded as what the launch adds to avatar's own, no more."""
    home, cwd = place
    tmp = "/tmp/avatar-agent-0123456789ab"
    env = {**os.environ, "TMPDIR": f"{tmp}/tmp", "ADDED": "yes"}
    spec = f"d\0 15\0p\0{os.getpid()}\0k\0{tmp}\0".replace(" ", "").encode()
    remembered.remember(home, "", cwd, [], PROGRAM, env, spec, "/bin/stub", tmp, provider="claude")
    record = json.loads(Path(remembered.place(home, cwd, "")).read_text())
    assert record["env"] == {"TMPDIR": f"{remembered.TMP}/tmp", "ADDED": "yes"}
    assert record["argv"][-1] == remembered.SESSION
    assert str(os.getpid()) not in record["spec"] and tmp not in record["spec"]
    assert record["unset"] == []


def test_only_the_provider_it_was_remembered_for_takes_it(place: tuple[Path, Path]) -> None:
    """The default provider may be another stream-json agent than `claude` (a config's): the
    record says whose launch it is, and that provider's engine takes it; any other stops it."""
    home, cwd = place
    remembered.remember(
        home, "", cwd, [], PROGRAM, dict(os.environ), None, None, "", provider="work"
    )
    remembered.start(str(home), str(cwd), "")
    early = remembered.take("work")
    assert early is not None and early.popen.poll() is None
    early.stop()
    os.close(early.lock)
    remembered.start(str(home), str(cwd), "")
    assert remembered.take("claude") is None
    assert remembered.take("work") is None  # (stopped, not kept for later)
