"""What an ACP agent's permission request would touch, checked against the scope before any
answer (docs/design.md §10): an agent that applies its own edits (codex applies patches itself,
Gemini writes files itself) asks `session/request_permission` first, and that question is the one
door avatar has on the edit.

The request's `ToolCall` names what it touches in `locations` (paths), in `content` items of
type `diff` (each names its `path`) and in `raw_input` (`command`, `cwd`, a path). Agents often
send those facts earlier, in the `tool_call` update that announced the call, and repeat only
the id when they ask (codex does): `ToolCalls` remembers each call's facts by id, and a request
is judged on both. How each path is checked follows the call's kind:

- `edit`, `delete`, `move`, or a kind not given or not known: every location and every diff
  path must be writable (outside the project, denied and protected paths are refused);
- `read`, `search`: locations must be readable; diff paths still need writing;
- `execute`: the command must pass `scope.shell_commands` (a string is a shell line, a list an
  argv) and its working directory must lie inside the session's directories; when an
  allow-list is set, a request whose command cannot be found is refused;
- `think`, `fetch`, `switch_mode`: nothing on disk, nothing to check.

What cannot be checked is denied (`CallFacts.unchecked`): an `edit`, `delete`, `move`, `read` or
`search` that names no path in those fields (its path only in the title, or under a key of
`raw_input` this door does not know), an absolute path in the title of any call that touches
files which none of those fields names, and a path-like value under an unknown key of
`raw_input`. What the real agents send passes: claude-agent-acp names its file in `locations`,
a `diff` and `raw_input.file_path`, and its command in `raw_input.command` (the title repeats
it); codex-acp announces an edit's diff first and asks with its `locations`, and puts a
command and its `cwd` in `raw_input`; Gemini names its edits in `locations` and a `diff`, and
a command only in the title, its directory in the content's text (`[in DIR]`, read as the
`cwd`); an MCP tool call (`other`, its arguments in `raw_input`) names no path at all.

A refusal is a deny whatever the permission policy says (`--permission allow` included).
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from avatar.policy.claude_tools import refusal
from avatar.policy.scope import Mode, ScopePolicy

WRITE_KINDS = frozenset({"edit", "delete", "move"})
READ_KINDS = frozenset({"read", "search"})
NO_PATH_KINDS = frozenset({"think", "fetch", "switch_mode"})
#: `raw_input` keys agents name a file by.
PATH_KEYS = ("path", "file_path", "filePath", "notebook_path")
#: `raw_input` keys that hold what a call writes or says, never a path it touches: the text of
#: an edit, a command and its words, a search pattern, a URL (claude-agent-acp's tools, codex's
#: commands, MCP tools' usual arguments).
DATA_KEYS = frozenset(
    {
        "content", "new_string", "old_string", "newText", "oldText", "new_source", "edits",
        "text", "description", "justification", "instruction", "prompt", "plan", "todos",
        "command", "cmd", "pattern", "glob", "query", "url", "type", "output_mode",
    }
)  # fmt: skip
#: How many announced tool calls are remembered (a turn rarely has more waiting on a question).
REMEMBERED = 256
# Gemini says where a command runs in its content's text: `[in /path] (description)`.
_GEMINI_DIR = re.compile(r"\[in (/[^\]\n]*)\]")


@dataclass
class CallFacts:
    """What a tool call is known to touch: its kind, paths, command and working directory."""

    kind: str | None = None
    locations: list[str] = field(default_factory=list)
    diff_paths: list[str] = field(default_factory=list)
    raw_input: Mapping[str, Any] = field(default_factory=dict)
    title: str = ""
    texts: list[str] = field(default_factory=list)  #: the content's text items

    @classmethod
    def of(cls, call: Any) -> CallFacts:
        """The facts an ACP `ToolCall`/`ToolCallUpdate`, as the agent wrote it, states."""
        locations = [str(p) for loc in get(call, "locations") or [] if (p := get(loc, "path"))]
        content = get(call, "content") or []
        diffs = [
            str(get(item, "path"))
            for item in content
            if get(item, "type") == "diff" and get(item, "path")
        ]
        texts = [
            str(text)
            for item in content
            if get(item, "type") == "content" and (text := get(get(item, "content") or {}, "text"))
        ]
        raw = get(call, "raw_input", "rawInput")
        kind = get(call, "kind")
        return cls(
            kind and str(kind),
            locations,
            diffs,
            raw if isinstance(raw, Mapping) else {},
            str(get(call, "title") or ""),
            texts,
        )

    def merged(self, earlier: CallFacts) -> CallFacts:
        """These facts completed with what an earlier announcement of the call stated."""
        return CallFacts(
            self.kind or earlier.kind,
            [*self.locations, *earlier.locations],
            [*self.diff_paths, *earlier.diff_paths],
            self.raw_input or earlier.raw_input,
            self.title or earlier.title,
            self.texts or earlier.texts,
        )

    def _named(self) -> list[str]:
        return [str(v) for k in PATH_KEYS if isinstance(v := self.raw_input.get(k), str) and v]

    def cwd(self) -> str | None:
        """Where an `execute` call runs: `raw_input.cwd`, else Gemini's `[in DIR]`."""
        given = self.raw_input.get("cwd")
        if isinstance(given, str) and given:
            return given
        found = (m for text in self.texts if (m := _GEMINI_DIR.match(text)))
        first = next(found, None)
        return first.group(1) if first else None

    def unchecked(self) -> str | None:
        """Why this call cannot be checked (see the module's docstring), or None."""
        if self.kind in NO_PATH_KINDS or self.kind == "execute":
            return None
        known = [*self.locations, *self.diff_paths, *self._named()]
        if self.kind in WRITE_KINDS | READ_KINDS and not known:
            return f"it names no path avatar can check (a {self.kind} of what?)"
        stray = next(_path_values(self.raw_input), None)
        if stray is not None:
            return f"it names a path avatar does not check ({stray[0]}: {stray[1]!r})"
        seen = {_norm(p) for p in known}
        for word in _title_paths(self.title):
            if _norm(word) not in seen:
                return f"its title names a path its request does not ({word!r})"
        return None

    def targets(self) -> list[tuple[str, Mode]]:
        """The paths the call touches, each with the access it needs."""
        named = self._named()
        out: list[tuple[str, Mode]] = [(p, "write") for p in self.diff_paths]
        if self.kind in READ_KINDS:
            out += [(p, "read") for p in [*self.locations, *named]]
        elif self.kind == "execute":
            cwd = self.cwd()
            out += [(cwd, "read")] if cwd else []
        elif self.kind not in NO_PATH_KINDS:
            out += [(p, "write") for p in [*self.locations, *named]]
        return out

    def command(self) -> str | list[str] | None:
        """The command an `execute` call runs: a shell line, or an argv; Gemini names it only
        in the title."""
        if self.kind != "execute":
            return None
        given = self.raw_input.get("command")
        if isinstance(given, str):
            return given
        if isinstance(given, list) and given and all(isinstance(a, str) for a in given):
            return list(given)
        return (self.title or None) if not self.raw_input else None


def _path_like(value: str) -> bool:
    """A string that names a file rather than says something: absolute, home- or
    dot-relative, on one line."""
    return value.startswith(("/", "~/", "./", "../")) and "\n" not in value and len(value) < 4096


def _path_values(data: Mapping[str, Any], depth: int = 0) -> Iterator[tuple[str, str]]:
    """(key, value) for each path-like string under a key this door neither checks nor knows
    to hold data, in `raw_input` and the mappings and lists inside it."""
    for key, value in data.items():
        if key in PATH_KEYS or key in DATA_KEYS or key == "cwd":
            continue
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, str) and _path_like(item):
                yield str(key), item
            elif isinstance(item, Mapping) and depth < 3:
                yield from _path_values(item, depth + 1)


def _title_paths(title: str) -> Iterator[str]:
    """The absolute (or home) paths a title names, by its words."""
    for word in title.split():
        word = word.strip("'\"`()[]{},;:")
        if word.startswith(("/", "~/")) and len(word) > 1:
            yield word


def _norm(path: str) -> str:
    return os.path.normpath(os.path.expanduser(path))


def get(obj: Any, *names: str) -> Any:
    """The first of `names` that `obj` (the wire's dict, or an object with such attributes)
    has set; None for anything else."""
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


class ToolCalls:
    """The tool calls an agent announced in this session, by id (the newest `REMEMBERED`)."""

    def __init__(self) -> None:
        self._facts: OrderedDict[str, CallFacts] = OrderedDict()

    def seen(self, update: Any) -> None:
        """Remember what a `tool_call` or `tool_call_update` says about its call."""
        call_id = get(update, "tool_call_id", "toolCallId")
        if call_id is None:
            return
        key = str(call_id)
        facts = CallFacts.of(update)
        earlier = self._facts.pop(key, None)
        if earlier is not None and get(update, "session_update", "sessionUpdate") != "tool_call":
            facts = facts.merged(earlier)  # an update adds to its call; a new call starts over
        self._facts[key] = facts
        while len(self._facts) > REMEMBERED:
            self._facts.popitem(last=False)

    def facts(self, tool_call: Any) -> CallFacts:
        """What a permission request's tool call touches, with what its announcement said."""
        facts = CallFacts.of(tool_call)
        earlier = self._facts.get(str(get(tool_call, "tool_call_id", "toolCallId")))
        return facts.merged(earlier) if earlier is not None else facts


def scope_refusal(policy: ScopePolicy, facts: CallFacts) -> str | None:
    """Why the scope refuses the tool call `facts` describe, or None (the permission policy
    decides then)."""
    unchecked = facts.unchecked()
    if unchecked is not None:
        return f"the request cannot be checked: {unchecked}"
    command = facts.command()
    if facts.kind == "execute" and command is None and policy.shell_commands:
        return "the command of this request is not given, and scope.shell_commands is set"
    return refusal(policy, facts.targets(), command)


def pick_option(options: list[Any], allow: bool) -> Any | None:
    """The agent's option (as it wrote it) matching the decision:
    allow_once/reject_once first, then *_always."""
    wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if get(option, "kind") == kind:
                return option
    return None
