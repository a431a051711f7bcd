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

`scope.shell_commands` (empty = any command) is an allow-list of program names, checked by one
conservative parser for the native bash tool, ACP terminals and Claude's Bash tool: every
command of a line (`;`, `&&`, `||`, `|`, `&`, newlines, `VAR=x cmd`, `/usr/bin/rm` → `rm`) must
be allowed; `$(…)`, backticks, process substitution, `for`/`case` and setting `PATH`, `LD_*` or
`BASH_ENV` are refused; `sh -c "…"`/`bash -c "…"` is checked by its inner command line.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from avatar.core.config import user_config_path
from avatar.policy.patterns import pattern_matches
from avatar.policy.programs import program_name, refuse_hard_link
from avatar.policy.protected import protected_by

if TYPE_CHECKING:
    from avatar.core.config import Scope

Mode = Literal["read", "write"]


class ScopeDenied(Exception):
    """A path or command the scope refuses; the message is written for the agent to read."""


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


# -- shell commands -------------------------------------------------------------------------

_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})
# bash's operators, longest first: a run of punctuation is split greedily as bash does.
_OPERATORS: tuple[str, ...] = (";;&", "&>>", "<<<", "<<-", ";;", ";&", "&&", "||", "|&", "&>")
_OPERATORS += (">>", "<<", "<>", ">&", "<&", ">|", ";", "&", "|", "(", ")", "<", ">")
_PUNCTUATION = ";&|()<>"
_PREFIX_WORDS = frozenset(
    {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "fi", "done"}
)
_UNCHECKABLE = ("$(", "`", "<(", ">(")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
# Variables that make an allowed program (or the shell) run something else.
_RISKY_VARS = re.compile(r"(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|(LD|DYLD|BASH_FUNC)_.*)\Z")


def check_env(names: Iterable[str], allowed: Sequence[str]) -> None:
    """Raise `ScopeDenied` when an allow-list is set and `names` sets a variable such as `PATH`,
    `LD_PRELOAD` or `BASH_ENV`, which would let an allowed program run another one."""
    for name in names if allowed else ():
        if _RISKY_VARS.match(name):
            raise ScopeDenied(f"setting {name} is not allowed when scope.shell_commands is set")


def _operators(token: str) -> list[str]:
    ops: list[str] = []
    while token:
        op = next(o for o in _OPERATORS if token.startswith(o))
        ops.append(op)
        token = token[len(op) :]
    return ops


def command_words(command: str) -> list[list[str]]:
    """The simple commands a shell line runs, each as its words (program first), without
    leading assignments and redirections. Conservative: raises `ScopeDenied` for constructs
    whose commands cannot be known up front (command substitution, `for`/`case`, unbalanced
    quotes); a comment where a command is expected is refused too."""
    for token in _UNCHECKABLE:
        if token in command:
            raise ScopeDenied(
                f"{token!r} (a nested command) is not allowed when scope.shell_commands is set"
            )
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace_split = True
    lexer.commenters = ""  # `a#b; rm x` runs rm: never let `#` hide the rest of a line
    try:
        tokens = list(lexer)
    except ValueError as e:
        raise ScopeDenied(f"cannot parse the command: {e}") from None
    commands: list[list[str]] = []
    words: list[str] | None = None  # the command being read; None = expecting one
    skip_target = False
    for token in tokens:
        if token and set(token) <= set(_PUNCTUATION):
            for op in _operators(token):
                if op[0] in "<>" or op in ("&>", "&>>"):
                    skip_target = True  # `> file`, `2>&1`: the next word is not a command
                else:
                    words, skip_target = None, False
            continue
        if skip_target:
            skip_target = False
            continue
        if words is not None:
            words.append(token)
            continue
        if assignment := _ASSIGNMENT.match(token):
            check_env([assignment[1]], ["(an allow-list is set)"])
            continue  # `VAR=value cmd`
        if token in _PREFIX_WORDS:
            continue  # `if cmd`, `! cmd`
        if token in ("for", "case", "select", "function", "coproc"):
            raise ScopeDenied(
                f"shell {token!r} statements are not allowed when scope.shell_commands is set"
            )
        if token.startswith("#"):
            raise ScopeDenied("a comment line is not allowed when scope.shell_commands is set")
        words = [token]
        commands.append(words)
    return commands


def command_names(command: str) -> list[str]:
    """The program names (basenames) a shell command line runs; see `command_words`."""
    return [os.path.basename(words[0]) for words in command_words(command)]


def shell_inner_command(argv: Sequence[str]) -> str | None:
    """The command line of a shell `-c` invocation (`bash -lc "…"`), else None."""
    if not argv or os.path.basename(argv[0]) not in _SHELLS:
        return None
    i, has_c = 1, False
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
        elif arg.startswith("--"):
            i += 1
        elif len(arg) > 1 and arg[0] in "-+":
            has_c = has_c or (arg[0] == "-" and "c" in arg)
            i += 1
        else:
            break
    if not has_c:
        return None
    return argv[i] if i < len(argv) else ""


def check_argv(argv: Sequence[str], allowed: Sequence[str], _depth: int = 0) -> None:
    """Raise `ScopeDenied` unless `argv` is allowed by the allow-list `allowed` (empty = any).

    The program's basename must be listed, except for a shell `-c` invocation, whose inner
    command line is checked instead (the shell is then only the wrapper that runs it)."""
    if not allowed or not argv:
        return
    inner = shell_inner_command(argv)
    if inner is not None:
        if _depth >= 4:
            raise ScopeDenied("shells nested this deep are not allowed by the scope")
        for words in command_words(inner):
            check_argv(words, allowed, _depth + 1)
        return
    name = program_name(argv[0])
    if name not in allowed:
        raise ScopeDenied(
            f"command {name!r} is not allowed by the scope "
            f"(scope.shell_commands: {', '.join(allowed)})"
        )


def check_command(command: str, allowed: Sequence[str]) -> None:
    """Raise `ScopeDenied` unless every command of shell line `command` is on `allowed`."""
    if not allowed:
        return
    for words in command_words(command):
        check_argv(words, allowed, 1)


# -- Claude Code's tools --------------------------------------------------------------------

_CLAUDE_PATHS: dict[str, tuple[str, Mode]] = {
    **dict.fromkeys(["Read", "NotebookRead"], ("file_path", "read")),
    **dict.fromkeys(["Write", "Edit", "MultiEdit"], ("file_path", "write")),
    **dict.fromkeys(["Grep", "Glob", "LS"], ("path", "read")),
    "NotebookEdit": ("notebook_path", "write"),
}
_CLAUDE_SEARCHES = frozenset({"Grep", "Glob", "LS"})


def claude_tool_paths(tool_name: str, tool_input: Any) -> list[tuple[str, Mode]]:
    """The paths a Claude Code tool call touches and how (a search without `path` reads the
    project root); empty for tools that name no path."""
    spec = _CLAUDE_PATHS.get(tool_name)
    if spec is None:
        return []
    key, mode = spec
    value = tool_input.get(key) if isinstance(tool_input, Mapping) else None
    if isinstance(value, str) and value.strip():
        return [(value, mode)]
    return [(".", mode)] if tool_name in _CLAUDE_SEARCHES else []


def refusal(
    policy: ScopePolicy,
    paths: Iterable[tuple[str, Mode]],
    command: str | Sequence[str] | None = None,
) -> str | None:
    """Why the scope refuses an action that touches `paths` (each with how) and runs `command`
    (a shell line, or an argv run without a shell), or None when it allows it. Every door that
    answers a permission request asks this first; the permission policy decides after it."""
    try:
        if isinstance(command, str):
            policy.check_command(command)
        elif command is not None:
            policy.check_argv(command)
        for path, mode in paths:
            policy.check(path, mode)
    except ScopeDenied as e:
        return str(e)
    return None


def check_tool_request(policy: ScopePolicy, tool_name: str, tool_input: Any) -> str | None:
    """Why the scope refuses Claude Code's `tool_name` call with `tool_input`, or None when it
    allows it (the permission policy still decides after this)."""
    command = None
    if tool_name == "Bash" and isinstance(tool_input, Mapping):
        given = tool_input.get("command")
        command = given if isinstance(given, str) else None
    return refusal(policy, claude_tool_paths(tool_name, tool_input), command)
