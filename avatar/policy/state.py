"""What of an agent's own state directories stays read-only inside its walls (docs/design.md §10).

An agent writes its state (`state_dirs` in the provider data) outside the project, and some of
that state is code that runs later, outside every wall: Claude Code's hooks in
`~/.claude/settings.json`, codex's MCP servers in `~/.codex/config.toml`, Gemini's extensions.
So, from the provider data:

- `state_protected` — what configures programs to run — is bound read-only for the agent and
  everything it runs. A path ending in `/` is a directory; one with `*` is a glob of what exists;
  one starting with `?` is covered only when it exists. A missing one is made first as an empty
  valid stand-in (`{}` for JSON, an empty file, an empty directory), since a file that does not
  exist cannot be bound and the agent could create it;
- `state_projects` — directories holding one entry per project, `{directory: rule}` — are
  read-only, this project's entry writable (made when missing), every other project's entry
  covered by an empty stand-in: neither readable nor writable. Which entry is this project's is
  the agent's own naming rule: `slug` (Claude Code: the path with every character but ASCII
  letters and digits turned to `-`, `project_slug`) or `marker:NAME` (Gemini CLI: the entry
  whose `NAME` file holds the project's path; that file stays read-only, and an entry without
  one is not a project's and stays writable). Entries are named alike in every directory of a
  provider's `marker` rule (Gemini keeps `tmp/<name>` and `history/<name>` together).

Sessions, logs and caches elsewhere in the state directories stay writable.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from avatar.policy.readable import expand

_SLUG_MAX = 200


@dataclass
class StateWalls:
    """The mounts that keep an agent's state: read-only, hidden (another project's) and
    opened (writable inside a read-only directory)."""

    read_only: list[Path] = field(default_factory=list)
    hidden: list[Path] = field(default_factory=list)
    opened: list[Path] = field(default_factory=list)


def state_walls(
    protected: Iterable[str],
    projects: Mapping[str, str],
    env: Mapping[str, str],
    project: Path,
) -> StateWalls:
    """The walls for an agent working in `project`, from its provider data."""
    walls = StateWalls(read_only=protected_paths(protected, env))
    marked: dict[str, list[Path]] = {}
    seen: set[Path] = set()
    for entry, rule in projects.items():
        directory = expand(entry, env)
        if directory is None:
            continue
        with contextlib.suppress(OSError):
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not directory.is_dir():
            continue
        directory = Path(os.path.realpath(directory))
        if directory in seen:  # (`$CLAUDE_CONFIG_DIR` set to `~/.claude`)
            continue
        seen.add(directory)
        if rule == "slug":
            _per_project(walls, directory, project_slug(str(project)), None)
        elif rule.startswith("marker:"):
            marked.setdefault(rule.removeprefix("marker:"), []).append(directory)
    for marker, directories in marked.items():
        name = _marked_entry(directories, marker, project)
        for directory in directories:
            _per_project(walls, directory, name, marker)
    return walls


def protected_paths(entries: Iterable[str], env: Mapping[str, str]) -> list[Path]:
    """The paths of `state_protected` entries (see the module docstring), stand-ins made."""
    out: list[Path] = []
    for entry in entries:
        optional = entry.startswith("?")
        path = expand(entry.removeprefix("?"), env)
        if path is None:
            continue
        if glob.has_magic(str(path)):
            out += [Path(os.path.realpath(p)) for p in sorted(glob.glob(str(path)))]
            continue
        if not os.path.lexists(path) and not optional:
            _stand_in(path, directory=entry.endswith("/"))
        if os.path.lexists(path):
            out.append(Path(os.path.realpath(path)))
    return out


def _stand_in(path: Path, directory: bool) -> None:
    """An empty valid stand-in at `path`: a directory, `{}` for JSON, else an empty file."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if directory:
            path.mkdir(mode=0o700)
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(b"{}\n" if path.suffix == ".json" else b"")


def _per_project(walls: StateWalls, directory: Path, own: str, marker: str | None) -> None:
    """`directory` read-only, `own` (made) writable over it, other projects' entries hidden."""
    with contextlib.suppress(OSError):
        (directory / own).mkdir(mode=0o700, exist_ok=True)
    walls.read_only.append(directory)
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name == own:
            walls.opened.append(path)
            if marker is not None and (path / marker).is_file():
                walls.read_only.append(path / marker)
        elif marker is None or _read_marker(path / marker) is not None:
            walls.hidden.append(path)  # another project's
        elif entry.is_dir(follow_symlinks=False):
            walls.opened.append(path)  # the agent's own, not a project's


def _marked_entry(directories: Sequence[Path], marker: str, project: Path) -> str:
    """This project's entry name in `directories` (a `marker:NAME` rule): the one whose marker
    names the project, else a new one free in all of them, claimed with its markers."""
    wanted = os.path.normpath(str(project))
    for directory in directories:
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                owner = _read_marker(Path(entry.path, marker))
                if owner is not None and os.path.normpath(owner) == wanted:
                    _claim(directories, entry.name, marker, wanted)
                    return entry.name
    taken = {e for d in directories for e in _names(d)}
    name = next(n for n in new_names(project) if n not in taken)
    _claim(directories, name, marker, wanted)
    return name


def _claim(directories: Sequence[Path], name: str, marker: str, owner: str) -> None:
    """Make `name` with its marker naming `owner` in every directory where it is missing."""
    for directory in directories:
        entry = directory / name
        with contextlib.suppress(OSError):
            entry.mkdir(mode=0o700, exist_ok=True)
            if not os.path.lexists(entry / marker):
                fd = os.open(entry / marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(owner)


def _names(directory: Path) -> set[str]:
    try:
        return set(os.listdir(directory))
    except OSError:
        return set()


def _read_marker(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return text or None


def new_names(project: Path) -> Iterable[str]:
    """Gemini CLI's names for a new project's entry, in the order it tries them: the last name
    of the path lowercased, every run of characters but `a-z0-9` turned to one `-`, then the
    same with `-1`, `-2`, …"""
    slug = re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", project.name.lower())).strip("-")
    slug = slug or "project"
    yield slug
    n = 1
    while True:
        yield f"{slug}-{n}"
        n += 1


def _java_hash(text: str) -> int:
    # Claude Code's 32-bit string hash (over UTF-16 code units, like JavaScript's charCodeAt).
    units = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + (units[i] | units[i + 1] << 8)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def project_slug(cwd: str) -> str:
    """The directory name Claude Code uses for a working directory (`slug`)."""
    # JavaScript replaces each UTF-16 code unit, so a character outside the BMP gives two dashes.
    slug = "".join(
        c if c.isascii() and c.isalnum() else ("--" if ord(c) > 0xFFFF else "-") for c in cwd
    )
    if len(slug) <= _SLUG_MAX:
        return slug
    return f"{slug[:_SLUG_MAX]}-{_base36(abs(_java_hash(cwd)))}"
