"""avatar's git worktrees (`avatar.library.worktrees`) on real repositories: where they are
made, how they are found again without running git, and what removing one keeps."""

from __future__ import annotations

import queue
import subprocess
import threading
from pathlib import Path

import pytest

from avatar.core.errors import AvatarError, UsageError
from avatar.library import worktree_place, worktrees


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
    assert worktree_place.of_repository(repo) == [made.path]
    assert worktree_place.avatar_worktree(made.path) == made.path
    assert worktree_place.avatar_worktree(repo) is None
    assert git(repo, "status", "--porcelain") == ""


def test_a_plain_linked_worktree_is_not_avatars(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"), "HEAD")
    assert worktree_place.avatar_worktree(tmp_path / "side") is None
    assert worktree_place.of_repository(repo) == []


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


def _repo_with_submodules(tmp_path: Path) -> Path:
    """`main` with submodule `sub` (itself with submodule `leaf`) and `other`, all local, all
    initialised but `other`."""
    allow = ("-c", "protocol.file.allow=always")
    for name in ("leaf", "sub", "other"):
        (tmp_path / name).mkdir()
        git(tmp_path / name, "init", "-q")
        (tmp_path / name / f"{name}.txt").write_text(f"{name}\n")
        git(tmp_path / name, "add", ".")
        git(tmp_path / name, "commit", "-qm", name)
    git(tmp_path / "sub", *allow, "submodule", "add", "-q", str(tmp_path / "leaf"), "leaf")
    git(tmp_path / "sub", "commit", "-qm", "leaf")
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q")
    for name in ("sub", "other"):
        git(main, *allow, "submodule", "add", "-q", str(tmp_path / name), name)
    git(main, "commit", "-qm", "subs")
    git(main, *allow, "submodule", "update", "--init", "--recursive", "-q")
    git(main, "submodule", "deinit", "-q", "other")
    return main


def test_a_worktree_has_the_submodules_the_checkout_initialised(tmp_path: Path) -> None:
    main = _repo_with_submodules(tmp_path)
    made = worktrees.create(main, "w")
    assert made.empty_submodules == ()
    assert (made.path / "sub" / "sub.txt").read_text() == "sub\n"
    assert (made.path / "sub" / "leaf" / "leaf.txt").read_text() == "leaf\n"  # recursively
    assert not (made.path / "other" / "other.txt").exists()  # as in the checkout
    assert git(made.path, "status", "--porcelain", "--ignore-submodules=none") == ""
    # Each fetches from where the checkout's copy does, not from that copy.
    assert git(made.path / "sub", "remote", "get-url", "origin").strip() == str(tmp_path / "sub")
    leaf_url = git(made.path / "sub" / "leaf", "remote", "get-url", "origin").strip()
    assert leaf_url == str(tmp_path / "leaf")


def test_removing_refuses_to_lose_uncommitted_work_unless_discarded(repo: Path) -> None:
    made = worktrees.create(repo, "w")
    (made.path / "f").write_text("changed\n")
    (made.path / "new").write_text("new\n")
    assert worktrees.unsaved(made.path) == ["M f", "?? new"]
    with pytest.raises(UsageError) as refused:
        worktrees.remove(made.path)
    said = str(refused.value)
    assert said.startswith(f"--worktree: {made.path} holds work not committed (M f, ?? new)")
    assert "commit it on its branch" in said and "--discard" in said
    assert (made.path / "new").exists()  # nothing was removed
    assert "threw away its work not committed (2)" in worktrees.remove(made.path, discard=True)
    assert not made.path.exists()


def test_removing_refuses_to_lose_a_submodules_work(tmp_path: Path) -> None:
    main = _repo_with_submodules(tmp_path)
    made = worktrees.create(main, "w")
    (made.path / "sub" / "leaf" / "leaf.txt").write_text("changed\n")
    assert worktrees.unsaved(made.path) == ["M sub"]
    git(made.path / "sub" / "leaf", "commit", "-qam", "in leaf")
    git(made.path / "sub", "commit", "-qam", "leaf moved")
    git(made.path, "commit", "-qam", "sub moved")
    # All committed, but those commits are only in the worktree's copies of the submodules.
    lost = worktrees.unsaved(made.path)
    assert [line.split(": commit")[0] for line in lost] == ["sub", "sub/leaf"]
    with pytest.raises(UsageError, match="holds work not committed"):
        worktrees.remove(made.path)
    assert "threw away" in worktrees.remove(made.path, discard=True)


def test_a_clean_worktree_with_submodules_is_removed(tmp_path: Path) -> None:
    main = _repo_with_submodules(tmp_path)
    made = worktrees.create(main, "w")
    assert worktrees.unsaved(made.path) == []
    assert "and its branch avatar/w" in worktrees.remove(made.path)
    assert not made.path.exists()


def test_a_submodule_that_cannot_be_checked_out_is_said(tmp_path: Path) -> None:
    main = _repo_with_submodules(tmp_path)
    # HEAD records a commit of `sub` that the checkout's copy has never fetched.
    git(tmp_path / "sub", "commit", "-q", "--allow-empty", "-m", "later")
    later = git(tmp_path / "sub", "rev-parse", "HEAD").strip()
    git(main, "update-index", "--cacheinfo", f"160000,{later},sub")
    git(main, "commit", "-qm", "sub moved")
    made = worktrees.create(main, "w")
    assert len(made.empty_submodules) == 1
    assert made.empty_submodules[0].startswith("submodule sub could not be checked out: ")
    assert f"; {made.empty_submodules[0]}" in made.describe()


def test_making_a_worktree_waits_for_another_avatars_turn(repo: Path) -> None:
    # git's `worktree add` reads every other worktree's files: two at once in one repository
    # can catch one half-written ("failed to read …/commondir") and fail.
    made: list[worktrees.Worktree] = []
    maker = threading.Thread(target=lambda: made.append(worktrees.create(repo, "late")))
    with worktrees.turn(repo / ".git"):
        maker.start()
        maker.join(1.0)
        assert maker.is_alive() and not made  # waiting, nothing made yet
        assert not (repo / ".git" / "avatar" / "worktrees" / "late").exists()
    maker.join(30)
    assert [m.name for m in made] == ["late"] and (made[0].path / "f").exists()


def test_a_turn_not_given_in_time_is_one_line_and_nothing_is_made(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worktrees, "TURN_WAIT", 0.3)
    made = worktrees.create(repo, "first")
    with worktrees.turn(repo / ".git"):
        refused = queue.Queue[BaseException]()

        def remove() -> None:
            try:
                worktrees.remove(made.path)
            except BaseException as e:  # (handed to the test)
                refused.put(e)

        remover = threading.Thread(target=remove)
        remover.start()
        with pytest.raises(AvatarError) as timed_out:
            worktrees.create(repo, "second")
        remover.join(10)
    said = str(timed_out.value)
    assert said.startswith("--worktree: another avatar has been making or removing a worktree")
    assert "nothing was done, try again" in said and "\n" not in said
    assert isinstance(refused.get_nowait(), AvatarError)
    assert made.path.exists()  # the removal that did not get its turn removed nothing
    assert not (repo / ".git" / "avatar" / "worktrees" / "second").exists()
    assert "avatar/second" not in git(repo, "branch")
