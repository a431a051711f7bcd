"""avatar's git worktrees (`avatar.library.worktrees`) on real repositories: where they are
made, how they are found again without running git, and what removing one keeps."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from avatar.core.errors import UsageError
from avatar.library import worktrees


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    git(work, "init", "-q")
    (work / "f").write_text("one\n")
    git(work, "add", "f")
    git(work, "commit", "-qm", "one")
    return work


def test_a_worktree_is_made_in_the_git_dir_and_found_again(repo: Path) -> None:
    made = worktrees.create(repo / ".", "w1")
    assert made.path == repo / ".git" / "avatar" / "worktrees" / "w1"
    assert made.branch == "avatar/w1" and not made.left_behind
    assert (made.path / "f").read_text() == "one\n"
    assert worktrees.of_repository(repo) == [made.path]
    assert worktrees.avatar_worktree(made.path) == made.path
    assert worktrees.avatar_worktree(repo) is None
    assert git(repo, "status", "--porcelain") == ""


def test_a_plain_linked_worktree_is_not_avatars(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"), "HEAD")
    assert worktrees.avatar_worktree(tmp_path / "side") is None
    assert worktrees.of_repository(repo) == []


def test_removing_keeps_a_branch_with_commits_and_drops_one_without(repo: Path) -> None:
    kept, dropped = worktrees.create(repo, "kept"), worktrees.create(repo, "dropped")
    (kept.path / "g").write_text("two\n")
    git(kept.path, "add", "g")
    git(kept.path, "commit", "-qm", "two")
    assert "kept: it has commits" in worktrees.remove(kept.path)
    assert "and its branch avatar/dropped" in worktrees.remove(dropped.path)
    assert not kept.path.exists() and not dropped.path.exists()
    assert git(repo, "branch", "--list", "avatar/*").split() == ["avatar/kept"]
    assert "already gone" in worktrees.remove(kept.path)


@pytest.mark.parametrize("name", ["../x", "a/b", "-x", "x.lock", "", "a..b", "x" * 65])
def test_a_name_that_cannot_name_a_branch_is_refused(name: str) -> None:
    with pytest.raises(UsageError, match="not a worktree name"):
        worktrees.check_name(name)


def test_a_repository_without_a_commit_is_refused(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    with pytest.raises(UsageError, match="no commit"):
        worktrees.create(tmp_path, "x")
