"""The one scope policy behind every front door: native tools, ACP fs and terminal callbacks,
and the answers to Claude's permission requests.

Patterns (`scope.read`, `scope.write`, `scope.deny`) are gitignore-style, relative to the
project root:

- a pattern without a `/` (other than a trailing one) matches a name at any depth:
  `*.pem` matches `x.pem` and `keys/x.pem`; `build` matches a file or directory named
  `build` anywhere;
- a pattern that matches a directory also matches everything below it: `build` covers
  `build/out.o`, `secrets/*` covers `secrets/a/b.txt`, `src` covers `src/app/main.py`;
- a `/` at the start or in the middle anchors the pattern to the root: `/top.txt` matches
  `top.txt` but not `sub/top.txt`; `docs/*.md` matches `docs/a.md` only. A leading `./`
  anchors too (`./src` is the root's `src`);
- `*` and `?` never cross a `/`, `[abc]`/`[!abc]` are character classes, `\\` escapes;
- `**` spans directories: `**/.env` is `.env` at any depth, `a/**/b` is `a/b`, `a/x/b`, …,
  and `dir/**` is everything inside `dir` (and, unlike git, `dir` itself);
- a trailing `/` (`build/`) matches only a directory (and what is below it);
- `.` (or `/`, `**`) is the whole project; an empty pattern matches nothing; `!` negation is
  not supported (a leading `!` is a literal character).

Paths are resolved (symlinks, `..`) before matching, so `../x`, an absolute path elsewhere or a
symlink pointing out of the project are outside it. `deny` is also checked against the path as
written (normalised), so a symlink inside the project cannot dodge a deny pattern by its name.
`deny` wins over `read`/`write`; directories added with `--add-dir` are readable and writable
(deny patterns apply inside them too, relative to the added directory).

The shell allow-list is `avatar.policy.shell`; what Claude Code's tool calls touch is
`avatar.policy.claude_tools`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from avatar.core.config import user_config_path
from avatar.policy.denied import ScopeDenied
from avatar.policy.patterns import pattern_matches
from avatar.policy.programs import refuse_hard_link
from avatar.policy.protected import protected_by
from avatar.policy.shell import check_argv, check_command

if TYPE_CHECKING:
    from avatar.core.config import Scope

Mode = Literal["read", "write"]


# -- the policy -----------------------------------------------------------------------------


def _rel(path: Path, base: Path) -> str | None:
    if path == base:
        return "."
    if path.is_relative_to(base):
        return path.relative_to(base).as_posix()
    return None


class ScopePolicy:
    """The `scope` config applied to one project root plus the directories added to it."""

    def __init__(
        self, scope: Scope, root: Path | str, extra_roots: Iterable[Path | str] = ()
    ) -> None:
        given = Path(os.path.abspath(os.path.expanduser(root)))
        self.root = Path(os.path.realpath(given))
        extra_given = [Path(os.path.normpath(given / os.path.expanduser(p))) for p in extra_roots]
        self.extra_roots = [Path(os.path.realpath(p)) for p in extra_given]
        # Real roots (where a resolved path may lie) and the names they were given by (where a
        # path as written may lie); `True` marks the project root.
        self._real = [(self.root, True), *((r, False) for r in self.extra_roots)]
        self._lexical = list(
            dict.fromkeys([*self._real, (given, True), *((p, False) for p in extra_given)])
        )
        self.read_patterns = list(scope.read)
        self.write_patterns = list(scope.write)
        self.deny_patterns = list(scope.deny)
        self.shell_commands = list(scope.shell_commands)
        self.allow_protected = list(scope.allow_protected)
        self.sandbox_mode = scope.sandbox
        self.read_outside = list(scope.read_outside)
        self.sockets = list(scope.sockets)
        self.network = scope.network
        patterns = [*self.read_patterns, *self.write_patterns, *self.deny_patterns]
        self._dir_only = any(p.strip().endswith("/") for p in patterns)  # stat only then

    @staticmethod
    def _user_config() -> Path:
        return Path(os.path.realpath(user_config_path()))

    def _homes(self, path: Path, lexical: bool = False) -> list[tuple[str, bool]]:
        """(relative path, under the project root?) for every root `path` lies in."""
        bases = self._lexical if lexical else self._real
        return [(rel, main) for base, main in bases if (rel := _rel(path, base)) is not None]

    def denied_by(self, rel: str, is_dir: bool = False) -> str | None:
        """The deny pattern matching relative path `rel`, if any."""
        return next((p for p in self.deny_patterns if pattern_matches(p, rel, is_dir)), None)

    def _allowed(self, homes: list[tuple[str, bool]], patterns: list[str], is_dir: bool) -> bool:
        if any(not main for _, main in homes):
            return True  # inside a directory added with --add-dir
        rel = homes[0][0]
        return any(pattern_matches(p, rel, is_dir) for p in patterns)

    def check(self, path: str | os.PathLike[str], mode: Mode) -> Path:
        """The real path `path` names (relative to the project root or absolute), when `mode`
        access to it is allowed; a `ScopeDenied` saying why not otherwise."""
        text = os.fspath(path)
        if not text.strip():
            raise ScopeDenied("path is empty")
        if "\0" in text:
            raise ScopeDenied(f"{text!r}: not a valid path")
        joined = self.root / os.path.expanduser(text)
        real = Path(os.path.realpath(joined))
        homes = self._homes(real)
        refused = f"{mode} access to {text} refused"
        if not homes:
            added = " and the directories added with --add-dir" if self.extra_roots else ""
            raise ScopeDenied(
                f"{refused}: outside the session's directories (the project {self.root}{added})"
            )
        is_dir = self._dir_only and os.path.isdir(real)
        names = [rel for rel, _ in homes]
        # The name as written too: a symlink inside the project may point anywhere.
        names += [rel for rel, _ in self._homes(Path(os.path.normpath(joined)), lexical=True)]
        for rel in dict.fromkeys(names):
            pattern = self.denied_by(rel, is_dir)
            if pattern is not None:
                raise ScopeDenied(f"{refused}: denied by the scope (deny pattern {pattern!r})")
            guard = self.protected_by(rel, mode, real)
            if guard is not None:
                raise ScopeDenied(
                    f"{refused}: a protected path ({guard}); the user can allow it with "
                    "scope.allow_protected"
                )
        if mode == "write" and real == self._user_config():
            raise ScopeDenied(f"{refused}: avatar's own config file is a protected path")
        refuse_hard_link(real, mode, refused)
        patterns = self.read_patterns if mode == "read" else self.write_patterns
        if not self._allowed(homes, patterns, is_dir):
            listed = ", ".join(repr(p) for p in patterns) or "nothing"
            raise ScopeDenied(f"{refused}: not in the {mode} scope (scope.{mode}: {listed})")
        return real

    def protected_by(self, rel: str, mode: Mode, real: Path) -> str | None:
        """The protected path (`avatar.policy.protected`) relative path `rel` of `real` falls
        under for `mode` access, unless `scope.allow_protected` lifts it; else None."""
        is_git_dir = rel == ".git" and os.path.isdir(real)
        return protected_by(rel, mode, is_git_dir, self.allow_protected)

    def is_hidden(self, real: Path) -> bool:
        """True for paths a search or listing must skip (outside, denied, protected for
        reading, or not readable)."""
        homes = self._homes(real)
        if not homes:
            return True
        is_dir = self._dir_only and os.path.isdir(real)
        for rel, _ in homes:
            if self.denied_by(rel, is_dir) is not None or self.protected_by(rel, "read", real):
                return True
        return not self._allowed(homes, self.read_patterns, is_dir)

    def display(self, real: Path) -> str:
        """A path as shown to the model: relative to the project when inside it."""
        rel = _rel(real, self.root)
        return str(real) if rel is None else rel

    def check_command(self, command: str) -> None:
        """Raise `ScopeDenied` unless every command of shell line `command` is allowed."""
        check_command(command, self.shell_commands)

    def check_argv(self, argv: Sequence[str]) -> None:
        """Raise `ScopeDenied` unless the program `argv` runs (without a shell) is allowed."""
        check_argv(argv, self.shell_commands)
