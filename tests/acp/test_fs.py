"""FileAccess: the agent's file callbacks stay inside the session's directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from avatar.bridges.acp.fs import AccessDenied, FileAccess
from avatar.core.config import Scope
from tests.support.protected import ORIGINAL, PROTECTED, SECRET_FILES, plant, snapshot


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "a.txt").write_text("one\ntwo\nthree\n")
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("[core]")
    (work / ".env").write_text("KEY=1")
    (work / "src" / ".env").write_text("KEY=2")
    (tmp_path / "outside.txt").write_text("outside")
    (tmp_path / "extra").mkdir()
    (tmp_path / "extra" / "b.txt").write_text("extra file")
    (work / "link").symlink_to(tmp_path / "outside.txt")
    return work


def test_reads_inside_the_cwd(tree: Path) -> None:
    files = FileAccess(tree, [], Scope())
    assert files.read("src/a.txt") == "one\ntwo\nthree\n"
    assert files.read(str(tree / "src" / "a.txt"), line=2, limit=1) == "two\n"
    assert files.read("src/a.txt", line=3) == "three\n"


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "link", ".env", "src/.env", ".env.local", ""],
)
def test_refusals(tree: Path, path: str) -> None:
    files = FileAccess(tree, [], Scope())
    with pytest.raises(AccessDenied):
        files.read(path)


@pytest.mark.parametrize("rel", PROTECTED)
def test_protected_paths_are_refused_for_writes(tmp_path: Path, rel: str) -> None:
    plant(tmp_path)
    before = snapshot(tmp_path)
    files = FileAccess(tmp_path, [], Scope(deny=[]))
    with pytest.raises(AccessDenied, match="protected path"):
        files.write(rel, "[core]\n\tfsmonitor = touch /tmp/pwned\n")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("rel", SECRET_FILES)
def test_secret_files_are_refused_for_reads_without_a_deny_pattern(
    tmp_path: Path, rel: str
) -> None:
    plant(tmp_path)
    with pytest.raises(AccessDenied, match="protected path"):
        FileAccess(tmp_path, [], Scope(deny=[])).read(rel)


def test_allow_protected_lets_the_named_path_through(tmp_path: Path) -> None:
    plant(tmp_path)
    files = FileAccess(tmp_path, [], Scope(allow_protected=[".git/hooks"]))
    files.write(".git/hooks/pre-commit", "#!/bin/sh\n")
    assert (tmp_path / ".git/hooks/pre-commit").read_text() == "#!/bin/sh\n"
    with pytest.raises(AccessDenied, match="protected path"):
        files.write(".git/config", "pwned")
    assert (tmp_path / ".git/config").read_text() == ORIGINAL


def test_additional_dirs_are_allowed(tree: Path) -> None:
    extra = tree.parent / "extra"
    files = FileAccess(tree, [extra], Scope())
    assert files.read(str(extra / "b.txt")) == "extra file"
    files.write(str(extra / "new.txt"), "x")
    assert (extra / "new.txt").read_text() == "x"


def test_write_creates_parents_and_respects_scope(tree: Path) -> None:
    files = FileAccess(tree, [], Scope())
    files.write("deep/er/c.txt", "hi")
    assert (tree / "deep" / "er" / "c.txt").read_text() == "hi"
    with pytest.raises(AccessDenied, match="outside the session"):
        files.write("../evil.txt", "x")
    assert not (tree.parent / "evil.txt").exists()
    read_only = FileAccess(tree, [], Scope(write=[]))
    with pytest.raises(AccessDenied):
        read_only.write("src/a.txt", "x")
    assert read_only.read("src/a.txt").startswith("one")


def test_custom_deny_patterns(tree: Path) -> None:
    files = FileAccess(tree, [], Scope(deny=["src/*", "*.key"]))
    with pytest.raises(AccessDenied, match=r"deny pattern 'src/\*'"):
        files.read("src/a.txt")
    with pytest.raises(AccessDenied, match=r"deny pattern '\*\.key'"):
        files.write("deep/id.key", "k")


def test_missing_file_and_directory(tree: Path) -> None:
    files = FileAccess(tree, [], Scope())
    with pytest.raises(AccessDenied, match=r"^Resource not found: .*no such file") as missing:
        files.read("nope.txt")
    assert missing.value.code == -32002  # ACP's "Resource not found", not a refusal
    # Gemini reads a file before creating it, and only an empty read lets it (its quirk).
    assert FileAccess(tree, [], Scope(), missing_reads_empty=True).read("nope.txt") == ""
    with pytest.raises(AccessDenied, match="outside"):
        FileAccess(tree, [], Scope(), missing_reads_empty=True).read("/etc/nope.txt")
    with pytest.raises(AccessDenied, match="is a directory"):
        files.read("src")
