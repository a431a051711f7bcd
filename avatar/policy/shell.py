"""The shell allow-list (`scope.shell_commands`).

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
from collections.abc import Iterable, Sequence

from avatar.policy.denied import ScopeDenied
from avatar.policy.programs import program_name

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
