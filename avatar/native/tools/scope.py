"""Scope enforcement for the native tools: which paths may be read or written, which commands run.

Paths are resolved against the project root and through symlinks before any check, so
`../outside`, an absolute path elsewhere, or a symlink pointing out of the project are all
refused. Patterns are relative to the project: a plain path (`.`, `src`) covers that path and
everything below it; a glob uses `*`, `?`, `[..]` and `**` (any number of directories), and
`dir/**` also covers `dir` itself.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from avatar.native.tools.base import ToolError

if TYPE_CHECKING:
    from avatar.config import Scope

Mode = Literal["read", "write"]
_GLOB_CHARS = frozenset("*?[")


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex matching relative POSIX paths against a glob with `**`."""
    pattern = pattern.strip().removeprefix("./").rstrip("/") or "."
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(pattern: str, rel: str) -> bool:
    """Does relative POSIX path `rel` fall under `pattern` (a plain path or a glob)?"""
    pat = pattern.strip().removeprefix("./").rstrip("/") or "."
    if not _GLOB_CHARS.intersection(pat):
        return pat == "." or rel == pat or rel.startswith(pat + "/")
    return glob_regex(pat).match(rel) is not None


class ScopePolicy:
    """The `scope` config applied to one project root (plus any added directories)."""

    def __init__(self, scope: Scope, root: Path, extra_roots: Sequence[Path] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        self.extra_roots = [Path(os.path.realpath(p)) for p in extra_roots]
        self.read_patterns = list(scope.read)
        self.write_patterns = list(scope.write)
        self.deny_patterns = list(scope.deny)
        self.shell_commands = list(scope.shell_commands)

    # -- paths ------------------------------------------------------------------------------

    def absolute(self, path: str) -> Path:
        """`path` made absolute against the project root (no symlink resolution)."""
        p = Path(os.path.expanduser(path))
        return p if p.is_absolute() else self.root / p

    def _relative(self, real: Path) -> tuple[str, bool] | None:
        """(relative path, under the main root?) or None when outside every root."""
        for base, main in ((self.root, True), *((r, False) for r in self.extra_roots)):
            if real == base:
                return ".", main
            if real.is_relative_to(base):
                return real.relative_to(base).as_posix(), main
        return None

    def denied_by(self, rel: str) -> str | None:
        """The deny pattern matching relative path `rel`, if any."""
        for pattern in self.deny_patterns:
            if matches(pattern, rel):
                return pattern
        return None

    def check(self, path: str, mode: Mode) -> Path:
        """The real path `path` names, if `mode` access is allowed; else a `ToolError`."""
        if not path or not path.strip():
            raise ToolError("path is empty")
        lexical = self.absolute(path)
        real = Path(os.path.realpath(lexical))
        where = self._relative(real)
        if where is None:
            raise ToolError(
                f"{path}: outside the project ({self.root}); the native tools may only "
                f"{mode} inside it"
            )
        rel, main = where
        # Check the name as written too: a symlink inside the project may point anywhere.
        lexical_rel = self._relative(Path(os.path.normpath(lexical)))
        for candidate in {rel, lexical_rel[0] if lexical_rel else rel}:
            pattern = self.denied_by(candidate)
            if pattern is not None:
                raise ToolError(f"{path}: denied by the scope (deny pattern {pattern!r})")
        if main:
            allowed = self.read_patterns if mode == "read" else self.write_patterns
            if not any(matches(p, rel) for p in allowed):
                listed = ", ".join(repr(p) for p in allowed) or "nothing"
                raise ToolError(f"{path}: not in the {mode} scope (scope.{mode}: {listed})")
        return real

    def is_hidden(self, real: Path) -> bool:
        """True for paths a search or listing must skip (outside, or denied)."""
        where = self._relative(real)
        if where is None:
            return True
        rel, main = where
        if self.denied_by(rel) is not None:
            return True
        return main and not any(matches(p, rel) for p in self.read_patterns)

    def display(self, real: Path) -> str:
        """A path as shown to the model: relative to the project when inside it."""
        if real.is_relative_to(self.root):
            rel = real.relative_to(self.root).as_posix()
            return rel or "."
        return str(real)

    # -- commands ---------------------------------------------------------------------------

    def check_command(self, command: str) -> None:
        """Raise a `ToolError` unless every command in `command` is on the allow-list."""
        if not self.shell_commands:
            return
        allowed = set(self.shell_commands)
        for name in command_names(command):
            if name not in allowed:
                listed = ", ".join(self.shell_commands)
                raise ToolError(
                    f"command {name!r} is not allowed by the scope (scope.shell_commands: {listed})"
                )


_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&", "(", ")", ";;", "\n"})
_PREFIX_WORDS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "fi", "done"}
)
_UNCHECKABLE = ("$(", "`", "<(", ">(")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def command_names(command: str) -> list[str]:
    """The program names a shell command line runs (best effort, conservative).

    Raises a `ToolError` for constructs whose commands cannot be known up front (command
    substitution, `for`/`case` bodies with dynamic names, unbalanced quotes).
    """
    for token in _UNCHECKABLE:
        if token in command:
            raise ToolError(
                f"{token!r} (a nested command) is not allowed when scope.shell_commands is set"
            )
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as e:
        raise ToolError(f"cannot parse the command: {e}") from None
    names: list[str] = []
    expect_command = True
    skip_redirect_target = False
    for token in tokens:
        if skip_redirect_target:
            skip_redirect_target = False
            continue
        if token in _SEPARATORS or (token and set(token) <= set(";&|()") and token):
            expect_command = True
            continue
        if token and set(token) <= set("<>&"):
            skip_redirect_target = True  # `> file`, `2>&1` … the next word is not a command
            continue
        if not expect_command:
            continue
        if token in _PREFIX_WORDS:
            continue
        if token in ("for", "case", "select", "function"):
            raise ToolError(
                f"shell {token!r} statements are not allowed when scope.shell_commands is set"
            )
        if _ASSIGNMENT.match(token):
            continue  # `VAR=value cmd`
        names.append(os.path.basename(token))
        expect_command = False
    return names
