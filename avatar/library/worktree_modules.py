"""The submodules of avatar's git worktrees (`avatar.library.worktrees`).

A new worktree gets the submodules your checkout has initialised, each cloned from your
checkout's own copy (`git submodule update --init` with that copy as its URL: no network, and
objects hard-linked), then pointed at the remote your copy fetches from; those your checkout
has not initialised stay empty, as there. Git's own `git submodule update --init` in a new
worktree would fetch every one again from its URL, and refuses a local one (`transport 'file'
not allowed`); the file transport is allowed here only for the copy avatar names, never for a
URL the repository names.

A worktree's submodules keep their git directories inside the worktree's, so removing the
worktree removes them: `only_here` names the commits of a submodule that your checkout's copy
does not have, which removing it would lose.
"""

from __future__ import annotations

from pathlib import Path

from avatar.core.errors import AvatarError


def git(cwd: Path, *args: str) -> tuple[bool, str]:
    """`git -C cwd ARGS`: whether it succeeded, and its output (its error when it failed)."""
    from avatar.core.quick_run import quick_run  # (subprocess: not for a listing)

    out = quick_run(["git", "-C", str(cwd), *args], timeout=120)
    if out is None:
        raise AvatarError("--worktree: git could not be run")
    return out.returncode == 0, (out.stdout if out.returncode == 0 else out.stderr).strip()


def last_line(said: str) -> str:
    """The last line of what git said (its reason), for a one-line error."""
    return said.splitlines()[-1] if said else "no reason given"


def listed(top: Path) -> list[tuple[str, str]]:
    """(name, path) of each submodule `.gitmodules` at `top` names."""
    if not (top / ".gitmodules").is_file():
        return []
    ok, said = git(top, "config", "--file", ".gitmodules", "--get-regexp", r"^submodule\..*\.path$")
    if not ok:
        return []
    out = []
    for line in said.splitlines():
        key, _, path = line.partition(" ")
        name = key.removeprefix("submodule.").removesuffix(".path")
        # (never a name that would change the meaning of `-c submodule.NAME.url=…`)
        if (
            path
            and "=" not in name
            and ".." not in Path(path).parts
            and not Path(path).is_absolute()
        ):
            out.append((name, path))
    return out


def _own_git_dir(top: Path) -> Path | None:
    """The git directory of the checkout at `top` when it has one of its own (a populated
    submodule); None otherwise."""
    if not (top / ".git").exists():
        return None
    ok, said = git(top, "rev-parse", "--absolute-git-dir")
    return Path(said) if ok else None


def initialise(source: Path, top: Path) -> list[str]:
    """Initialise, in the new checkout at `top`, every submodule initialised in the checkout
    at `source` (and theirs, recursively) from the copy there; what could not be, one phrase
    each."""
    problems = []
    for name, path in listed(top):
        copy = _own_git_dir(source / path)
        if copy is None:
            continue  # not initialised in your checkout: empty here too
        ok, said = git(
            top,
            "-c",
            "protocol.file.allow=always",
            "-c",
            f"submodule.{name}.url={copy}",
            "submodule",
            "update",
            "--init",
            "--quiet",
            "--",
            path,
        )
        if not ok:
            problems.append(f"submodule {path} could not be checked out: {last_line(said)}")
            continue
        ok, upstream = git(source / path, "remote", "get-url", "origin")
        if ok:
            git(top / path, "remote", "set-url", "origin", upstream)
        problems += initialise(source / path, top / path)
    return problems


def only_here(source: Path, top: Path) -> list[str]:
    """The commits (at HEAD and at the tips of local branches) of the submodules of the
    checkout at `top`, recursively, that the same submodule in the checkout at `source` does
    not have; one `path: commit` each."""
    out = []
    for _, path in listed(top):
        if _own_git_dir(top / path) is None:
            continue
        ok, tips = git(top / path, "for-each-ref", "--format=%(objectname)", "refs/heads")
        heads = {"HEAD", *(tips.split() if ok else [])}
        has_copy = _own_git_dir(source / path) is not None
        for tip in sorted(heads):
            ok, commit = git(top / path, "rev-parse", "--verify", "--quiet", f"{tip}^{{commit}}")
            if not ok:
                continue
            there = has_copy and git(source / path, "cat-file", "-e", f"{commit}^{{commit}}")[0]
            if not there:
                out.append(f"{path}: commit {commit[:12]}")
        out += [f"{path}/{lost}" for lost in only_here(source / path, top / path)]
    return list(dict.fromkeys(out))
