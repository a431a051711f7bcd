"""One scope policy, every front door: each case gets the same answer (and the same refusal
message) from the native tools, the ACP fs and terminal callbacks, and the check behind Claude's
permission answers."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from avatar.bridges.acp.fs import AccessDenied, FileAccess
from avatar.bridges.acp.terminal import TerminalManager
from avatar.core.config import Scope
from avatar.native.tools.base import AgentToolResult, ToolContext
from avatar.native.tools.bash import BashTool
from avatar.native.tools.edit import EditTool
from avatar.native.tools.find import FindTool
from avatar.native.tools.grep import GrepTool
from avatar.native.tools.ls import LsTool
from avatar.native.tools.read import ReadTool
from avatar.native.tools.scope import ToolScope
from avatar.native.tools.write import WriteTool
from avatar.policy.claude_tools import check_tool_request
from avatar.policy.denied import ScopeDenied
from avatar.policy.scope import Mode, ScopePolicy

ORIGINAL = "original\n"
FILES = [
    "outside.txt",
    "outside_dir/o.txt",
    "shared/s.txt",
    "shared/.env",
    "proj/top.txt",
    "proj/sub/top.txt",
    "proj/keys/x.pem",
    "proj/keys/readme.txt",
    "proj/secrets/top.txt",
    "proj/secrets/a/b.txt",
    "proj/build/out.o",
    "proj/builder.txt",
    "proj/src/app.py",
    "proj/src/deep/x/y.py",
    "proj/docs/a.md",
    "proj/config.txt",
    "proj/victim",
    "proj/.git/config",
]
LINKS = {  # inside proj: name -> target
    "link_out": "../outside_dir",  # a directory outside the project
    "link_file_out": "../outside.txt",
    "peek": "secrets/a",  # a directory under a denied one
    ".env": "config.txt",  # a link whose own name is denied
}
HARD_LINKS = {  # inside proj: name -> another name of the same file (relative to proj)
    "hard_out": "../outside.txt",  # a hard link to a file outside the project
}


def build(base: Path) -> Path:
    """(Re)create the tree with every file's original content; returns the project root."""
    for rel in FILES:
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir():
            continue
        path.write_text(ORIGINAL)
    for name, target in LINKS.items():
        link = base / "proj" / name
        if not link.is_symlink():
            link.symlink_to(target)
    for name, target in HARD_LINKS.items():
        link = base / "proj" / name
        if not link.exists():
            os.link(base / "proj" / target, link)
    return base / "proj"


def snapshot(base: Path) -> dict[str, str]:
    return {
        str(p.relative_to(base)): p.read_text()
        for p in sorted(base.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


@dataclass
class Env:
    """One door's view of a case: the project root, added directories and scope."""

    base: Path
    root: Path
    scope: Scope
    extra: list[Path] = field(default_factory=list)

    def tool_ctx(self) -> ToolContext:
        async def allow(title: str, kind: str) -> bool:
            return True

        return ToolContext(ToolScope(self.scope, self.root, self.extra), allow, dict(os.environ))

    def files(self) -> FileAccess:
        return FileAccess(self.root, self.extra, self.scope)

    def terminals(self) -> TerminalManager:
        return TerminalManager(self.files(), os.environ)  # the scope's own allow-list

    def claude(self, tool: str, tool_input: dict[str, Any]) -> str | None:
        return check_tool_request(ScopePolicy(self.scope, self.root, self.extra), tool, tool_input)


Answer = str | None  # None: allowed; else the refusal message
Door = Callable[[Env, str], Awaitable[Answer]]


def tool_answer(out: AgentToolResult) -> Answer:
    return out.output if out.is_error else None


async def fs_answer(call: Callable[[], object]) -> Answer:
    try:
        call()
    except AccessDenied as e:
        return str(e)
    return None


async def terminal_answer(
    env: Env, command: str, args: list[str] | None, cwd: str | None
) -> Answer:
    terms = env.terminals()
    try:
        tid = await terms.create(command, args, cwd=cwd)
    except AccessDenied as e:
        return str(e)
    try:
        await terms.wait(tid)
    finally:
        await terms.close()
    return None


async def native_read(env: Env, path: str) -> Answer:
    return tool_answer(await ReadTool()({"path": path}, env.tool_ctx()))


async def native_grep(env: Env, path: str) -> Answer:
    return tool_answer(await GrepTool()({"pattern": "orig", "path": path}, env.tool_ctx()))


async def native_write(env: Env, path: str) -> Answer:
    return tool_answer(await WriteTool()({"path": path, "content": "changed"}, env.tool_ctx()))


async def native_edit(env: Env, path: str) -> Answer:
    args = {"path": path, "old_text": "original", "new_text": "changed"}
    return tool_answer(await EditTool()(args, env.tool_ctx()))


async def native_ls(env: Env, path: str) -> Answer:
    return tool_answer(await LsTool()({"path": path}, env.tool_ctx()))


async def native_find(env: Env, path: str) -> Answer:
    return tool_answer(await FindTool()({"pattern": "*", "path": path}, env.tool_ctx()))


async def acp_read(env: Env, path: str) -> Answer:
    return await fs_answer(lambda: env.files().read(path))


async def acp_write(env: Env, path: str) -> Answer:
    return await fs_answer(lambda: env.files().write(path, "changed"))


async def acp_terminal_cwd(env: Env, path: str) -> Answer:
    return await terminal_answer(env, "pwd", None, path)


def claude(tool: str, key: str, **more: str) -> Door:
    async def door(env: Env, path: str) -> Answer:
        return env.claude(tool, {key: path, **more})

    return door


DOORS: dict[str, dict[str, Door]] = {
    "read": {
        "native read": native_read,
        "native grep": native_grep,
        "acp fs/read_text_file": acp_read,
        "claude Read": claude("Read", "file_path"),
        "claude Grep": claude("Grep", "path", pattern="orig"),
    },
    "write": {
        "native write": native_write,
        "native edit": native_edit,
        "acp fs/write_text_file": acp_write,
        "claude Write": claude("Write", "file_path", content="changed"),
        "claude Edit": claude("Edit", "file_path", old_string="original", new_string="x"),
    },
    "dir": {
        "native ls": native_ls,
        "native find": native_find,
        "native grep": native_grep,
        "acp terminal cwd": acp_terminal_cwd,
        "claude LS": claude("LS", "path"),
        "claude Glob": claude("Glob", "path", pattern="*"),
    },
}


@dataclass
class Case:
    id: str
    target: str  # a path ({base}/{root} filled in) or a command line
    allowed: bool
    mode: str = "read"  # read | write | dir | command
    deny: list[str] | None = None
    read: list[str] | None = None
    write: list[str] | None = None
    shell: list[str] | None = None
    extra: bool = False  # --add-dir {base}/shared
    argv: list[str] | None = None  # the same command as an ACP terminal's program + args

    def scope(self) -> Scope:
        given = {"deny": self.deny, "read": self.read, "write": self.write}
        fields: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        return Scope(**fields, shell_commands=self.shell or [])


PATH_CASES = [
    Case("pem at any depth", "keys/x.pem", False, deny=["*.pem"]),
    Case("pem at any depth (write)", "keys/x.pem", False, "write", deny=["*.pem"]),
    Case("pem: other files", "keys/readme.txt", True, deny=["*.pem"]),
    Case("secrets/* covers deeper files", "secrets/a/b.txt", False, deny=["secrets/*"]),
    Case("secrets/* (write)", "secrets/top.txt", False, "write", deny=["secrets/*"]),
    Case("build covers build/out.o", "build/out.o", False, deny=["build"]),
    Case("build is a name, not a prefix", "builder.txt", True, deny=["build"]),
    Case("build/ covers what is below", "build/out.o", False, "write", deny=["build/"]),
    Case("** spans directories", "src/deep/x/y.py", False, deny=["src/**/*.py"]),
    Case("** spans zero directories", "src/app.py", False, "write", deny=["src/**/*.py"]),
    Case("**: elsewhere", "docs/a.md", True, deny=["src/**/*.py"]),
    Case("leading / anchors", "top.txt", False, deny=["/top.txt"]),
    Case("leading /: not deeper", "sub/top.txt", True, deny=["/top.txt"]),
    Case("deny wins over write", "keys/x.pem", False, "write", write=["keys"], deny=["*.pem"]),
    Case("write scope allows", "keys/readme.txt", True, "write", write=["keys"], deny=["*.pem"]),
    Case("not in the write scope", "docs/a.md", False, "write", write=["keys"]),
    Case("not in the read scope", "top.txt", False, read=["src"]),
    Case("default deny .git", ".git/config", False, "write"),
    Case("absolute path inside", "{root}/top.txt", True),
    Case("absolute path outside", "{base}/outside.txt", False),
    Case(".. escapes", "../outside.txt", False),
    Case(".. escapes (write)", "src/../../outside.txt", False, "write"),
    Case(".. that stays inside", "src/../top.txt", True, "write"),
    Case("symlink to a file outside", "link_file_out", False),
    Case("symlink to a file outside (write)", "link_file_out", False, "write"),
    Case("symlink to a dir outside", "link_out/o.txt", False),
    Case("symlink into a denied dir", "peek/b.txt", False, deny=["secrets"]),
    Case("symlink named like a denied file", ".env", False),
    Case("the symlink's target by its own name", "config.txt", True),
    Case(".. after a symlink leaving the root", "link_out/../outside.txt", False),
    Case(".. after a symlink into denied", "peek/../top.txt", False, deny=["secrets/*"]),
    Case(".. after a symlink (write)", "link_out/../outside.txt", False, "write"),
    Case("hard link to a file outside (write)", "hard_out", False, "write"),
    # Reading is allowed: the content is in the project under this name (as a copy would be).
    Case("hard link to a file outside (read)", "hard_out", True),
    Case("added dir: read", "{base}/shared/s.txt", True, extra=True),
    Case("added dir: write", "{base}/shared/s.txt", True, "write", extra=True),
    Case(
        "added dir: beyond the write scope",
        "{base}/shared/s.txt",
        True,
        "write",
        write=[],
        extra=True,
    ),
    Case("added dir: deny applies inside", "{base}/shared/.env", False, extra=True),
    Case("not added: outside", "{base}/shared/s.txt", False),
    Case("dir: the root", ".", True, "dir"),
    Case("dir: build denied by name", "build", False, "dir", deny=["build"]),
    Case("dir: build/ names a directory", "build", False, "dir", deny=["build/"]),
    Case("dir: symlink outside", "link_out", False, "dir"),
    Case("dir: symlink into denied", "peek", False, "dir", deny=["secrets"]),
    Case("dir: parent", "..", False, "dir"),
    Case("dir: added", "{base}/shared", True, "dir", extra=True),
    Case("dir: not added", "{base}/shared", False, "dir"),
]

SHELL = ["ls", "echo", "cat", "pwd"]
COMMAND_CASES = [
    Case("plain", "ls", True, shell=SHELL, argv=["ls"]),
    Case("pipe of allowed", "echo hi | cat", True, shell=SHELL),
    Case("&& of allowed", "ls && echo ok", True, shell=SHELL),
    Case("env prefix, allowed", "VAR=x ls", True, shell=SHELL),
    Case("absolute path, allowed", "/bin/ls", True, shell=SHELL, argv=["/bin/ls"]),
    Case("shell -c, allowed inside", 'bash -c "ls"', True, shell=SHELL, argv=["bash", "-c", "ls"]),
    Case("no allow-list: anything", "rm -f victim", True, argv=["rm", "-f", "victim"]),
    Case("not allowed", "rm -f victim", False, shell=SHELL, argv=["rm", "-f", "victim"]),
    Case(";", "ls; rm -f victim", False, shell=SHELL),
    Case("&&", "ls && rm -f victim", False, shell=SHELL),
    Case("||", "ls || rm -f victim", False, shell=SHELL),
    Case("|", "ls | rm -f victim", False, shell=SHELL),
    Case("&", "ls & rm -f victim", False, shell=SHELL),
    Case("$(...)", "echo $(rm -f victim)", False, shell=SHELL),
    Case("backticks", "echo `rm -f victim`", False, shell=SHELL),
    Case("newline", "ls\nrm -f victim", False, shell=SHELL),
    Case("VAR=x cmd", "VAR=x rm -f victim", False, shell=SHELL),
    Case("PATH=x cmd", "PATH=. ls", False, shell=SHELL),
    Case(
        "/usr/bin/rm",
        "/usr/bin/rm -f victim",
        False,
        shell=SHELL,
        argv=["/usr/bin/rm", "-f", "victim"],
    ),
    Case(
        "bash -c", 'bash -c "rm -f victim"', False, shell=SHELL, argv=["bash", "-c", "rm -f victim"]
    ),
    Case("sh -c, second command", "sh -c 'ls; rm -f victim'", False, shell=SHELL),
    Case("# inside a word", "ls a#b; rm -f victim", False, shell=SHELL),
    Case("&&> redirect", "ls &&>out rm -f victim", False, shell=SHELL),
    Case("for loop", "for f in victim; do rm $f; done", False, shell=SHELL),
    Case("$(...) inside quotes", 'echo "$(rm -f victim)"', False, shell=SHELL),
    Case("backticks inside an allowed word", "ls a`rm -f victim`", False, shell=SHELL),
    Case("blank lines between", "ls\n\nrm -f victim", False, shell=SHELL),
    Case("several env prefixes", "A=1 B=2 rm -f victim", False, shell=SHELL),
    Case("LD_PRELOAD prefix", "LD_PRELOAD=/tmp/x.so ls", False, shell=SHELL),
    Case("env as a wrapper", "env rm -f victim", False, shell=SHELL, argv=["env", "rm"]),
    Case(
        "absolute path to an allowed name elsewhere",
        "/opt/evil/ls",
        False,
        shell=SHELL,
        argv=["/opt/evil/ls"],
    ),
    Case("relative path to an allowed name", "./ls", False, shell=SHELL, argv=["./ls"]),
]


def fill(case: Case, base: Path) -> str:
    return case.target.format(base=base, root=base / "proj")


def env_for(case: Case, base: Path) -> Env:
    extra = [base / "shared"] if case.extra else []
    return Env(base, base / "proj", case.scope(), extra)


def assert_same_answer(case: Case, answers: dict[str, Answer], reference: Answer) -> None:
    wrong = {door: a for door, a in answers.items() if (a is None) != case.allowed}
    assert not wrong, f"expected {'allowed' if case.allowed else 'denied'}: {wrong}"
    if not case.allowed:
        assert reference is not None
        assert set(answers.values()) == {reference}, answers  # one message everywhere


@pytest.mark.parametrize("case", PATH_CASES, ids=lambda c: c.id)
async def test_paths_answer_the_same_at_every_door(tmp_path: Path, case: Case) -> None:
    answers: dict[str, Answer] = {}
    for name, door in DOORS[case.mode].items():
        build(tmp_path)
        before = snapshot(tmp_path)
        env = env_for(case, tmp_path)
        answers[name] = await door(env, fill(case, tmp_path))
        if answers[name] is not None:
            assert snapshot(tmp_path) == before, f"{name} changed files although it refused"
    env = env_for(case, tmp_path)
    try:
        mode: Mode = "write" if case.mode == "write" else "read"
        ScopePolicy(env.scope, env.root, env.extra).check(fill(case, tmp_path), mode)
        reference: Answer = None
    except ScopeDenied as e:
        reference = str(e)
    assert_same_answer(case, answers, reference)


@pytest.mark.parametrize("case", COMMAND_CASES, ids=lambda c: c.id)
async def test_commands_answer_the_same_at_every_door(tmp_path: Path, case: Case) -> None:
    async def native_bash(env: Env) -> Answer:
        return tool_answer(await BashTool()({"command": case.target}, env.tool_ctx()))

    async def terminal_line(env: Env) -> Answer:
        return await terminal_answer(env, case.target, None, None)

    async def terminal_argv(env: Env) -> Answer:
        assert case.argv is not None
        return await terminal_answer(env, case.argv[0], case.argv[1:], None)

    async def claude_bash(env: Env) -> Answer:
        return env.claude("Bash", {"command": case.target})

    doors: dict[str, Callable[[Env], Awaitable[Answer]]] = {
        "native bash": native_bash,
        "acp terminal (command line)": terminal_line,
        "claude Bash": claude_bash,
    }
    if case.argv is not None:
        doors["acp terminal (argv)"] = terminal_argv
    answers: dict[str, Answer] = {}
    for name, door in doors.items():
        root = build(tmp_path)
        answers[name] = await door(env_for(case, tmp_path))
        if answers[name] is not None:
            assert (root / "victim").exists(), f"{name} ran the command although it refused"
    env = env_for(case, tmp_path)
    try:
        ScopePolicy(env.scope, env.root).check_command(case.target)
        reference: Answer = None
    except ScopeDenied as e:
        reference = str(e)
    assert_same_answer(case, answers, reference)


def test_claude_tool_paths() -> None:
    from avatar.policy.claude_tools import claude_tool_paths

    assert claude_tool_paths("Read", {"file_path": "a"}) == [("a", "read")]
    assert claude_tool_paths("MultiEdit", {"file_path": "a", "edits": []}) == [("a", "write")]
    assert claude_tool_paths("NotebookEdit", {"notebook_path": "n.ipynb"}) == [("n.ipynb", "write")]
    assert claude_tool_paths("Grep", {"pattern": "x"}) == [(".", "read")]  # searches the cwd
    assert claude_tool_paths("WebFetch", {"url": "http://x"}) == []
    assert claude_tool_paths("Read", None) == []
