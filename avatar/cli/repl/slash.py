"""The REPL's slash commands as one table: name, usage, help, whether it may run while a turn
does, and its handler. The table also makes `/help` and the completion of command names."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from avatar.core.errors import SessionNotFoundError
from avatar.core.times import ago

if TYPE_CHECKING:
    from avatar.cli.repl.host import ReplHost

Handler = Callable[["ReplHost", list[str]], Awaitable[bool]]
"""Runs a command with its arguments; True means leave the REPL."""


@dataclass(frozen=True)
class SlashCommand:
    """One slash command."""

    name: str
    usage: str  # what follows the name in /help
    help: str
    handler: Handler
    while_busy: bool = False  # allowed while a turn runs (and runs at once, not as a task)
    aliases: tuple[str, ...] = ()
    activity: str = ""  # what the spinner says while it runs; `{arg}`: the first argument

    def doing(self, args: list[str]) -> str:
        """What the spinner says while this command runs with `args`."""
        if "{arg}" in self.activity:
            return self.activity.format(arg=args[0] if args else "")
        return self.activity or self.name[1:]


async def _help(repl: ReplHost, args: list[str]) -> bool:
    repl.say(help_text())
    return False


async def _quit(repl: ReplHost, args: list[str]) -> bool:
    return True


async def _sessions(repl: ReplHost, args: list[str]) -> bool:
    from avatar.cli.output.table import render_table, short_ids

    engine = repl.engine
    everywhere = "--all" in args
    rows = engine.sessions(None, any_cwd=everywhere)[:50]
    for w in engine.library.warnings():
        repl.say(f"warning: {w}")
    if not rows:
        repl.say("no sessions here yet" + ("" if everywhere else " (/sessions --all: everywhere)"))
        return False
    current = engine.status().session_id
    ids = short_ids([s.id for s in rows])
    table = []
    for s, sid in zip(rows, ids, strict=True):
        cells = ["*" if s.id == current else "", s.provider, sid, (s.name or s.title or "")[:50]]
        cells += [ago(s.updated or s.created), str(s.messages)]
        table.append([*cells, s.cwd or "-"] if everywhere else cells)
    head = ["", "provider", "id", "title", "updated", "messages"]
    repl.say(render_table([*head, "directory"] if everywhere else head, table).rstrip())
    return False


async def _session(repl: ReplHost, args: list[str]) -> bool:
    s = repl.engine.status()
    repl.say(f"{s.session_id} ({s.provider}, {s.how})" if s.session_id else "no session yet")
    return False


async def _resume(repl: ReplHost, args: list[str]) -> bool:
    if len(args) != 1:
        repl.say("usage: /resume ID (or /resume alone, at a terminal, to pick one)")
    else:
        await repl.engine.agent.resume(args[0])
    return False


async def _search(repl: ReplHost, args: list[str]) -> bool:
    from avatar.cli.output.table import session_line

    if not args:
        repl.say("usage: /search WORDS (this project's sessions, every provider)")
        return False
    hits = repl.engine.search(" ".join(args))
    if not hits:
        repl.say("no session here matches")
    for hit in hits[:20]:
        repl.say(session_line(hit.session))
        repl.say(f"    {hit.snippet}")
    return False


async def _rename(repl: ReplHost, args: list[str]) -> bool:

    session_id = repl.engine.status().session_id
    if not args or session_id is None:
        repl.say("usage: /rename NAME (names the current session)")
        return False
    try:
        info = repl.engine.rename(session_id, " ".join(args))
    except SessionNotFoundError:
        repl.say("nothing to name yet: the session is saved after its first turn")
    else:
        repl.say(f"renamed: {info.name}")
    return False


async def _diff(repl: ReplHost, args: list[str]) -> bool:
    from avatar.cli.repl.diff_view import render_edit

    if args[:1] == ["--rewind"]:
        if len(args) != 2 or not (args[1].isdigit() and int(args[1]) >= 1):
            repl.say("usage: /diff --rewind N (what a rewind to before turn N would undo)")
        else:
            from avatar.cli.repl.rewind import diff

            diff(repl, int(args[1]))
        return False
    edits = repl.screen.edits.edits
    if len(args) > 1 or (args and not (args[0].isdigit() and int(args[0]) >= 1)):
        repl.say("usage: /diff [N | --rewind N] (N: one edit, as numbered on the screen)")
    elif not edits:
        repl.say("no edit in this session yet")
    elif args and int(args[0]) > len(edits):
        repl.say(f"no edit {args[0]}: this session has {len(edits)} (/diff shows them all)")
    else:
        numbers = [int(args[0])] if args else range(1, len(edits) + 1)
        for n in numbers:
            repl.screen.print(render_edit(edits[n - 1], n))
    return False


async def _rewind(repl: ReplHost, args: list[str]) -> bool:
    from avatar.cli.repl.rewind import rewind

    return await rewind(repl, args)


async def _continue(repl: ReplHost, args: list[str]) -> bool:
    await repl.engine.agent.continue_last()
    return False


async def _new(repl: ReplHost, args: list[str]) -> bool:
    await repl.engine.agent.new()
    return False


async def _worktree(repl: ReplHost, args: list[str]) -> bool:
    if len(args) > 1:
        repl.say("usage: /worktree [NAME] (NAME: generated when none)")
        return False
    provider = repl.engine.chosen_provider()  # (entering closes the open session)
    repl.say((await repl.engine.enter_worktree(args[0] if args else None)).describe())
    await repl.engine.agent.new(provider)
    return False


async def _provider(repl: ReplHost, args: list[str]) -> bool:
    names = [a for a in args if not a.startswith("--")]
    flags = set(args) - set(names)
    how = flags - {"--summarize"}  # a summary goes with a handoff: not with --fresh
    summarize = "--summarize" in flags
    if (
        len(names) != 1
        or not how <= {"--fresh", "--new", "--import"}
        or len(how) > 1
        or (summarize and how & {"--fresh", "--import"})
    ):
        repl.say("usage: /provider NAME [--fresh | --new | --import] [--summarize]")
    else:
        fresh = "--fresh" in flags
        await repl.engine.switch_provider(
            names[0],
            handoff=not fresh,
            new=fresh or "--new" in flags,
            imported="--import" in flags,
            summarize=summarize,
        )
        repl.offer_handoff()
    return False


async def _model(repl: ReplHost, args: list[str]) -> bool:
    if len(args) != 1:
        repl.say(f"model: {repl.engine.status().model or 'the provider default'}")
    else:
        await repl.engine.set_model(args[0])
        repl.say(f"model: {args[0]}")
    return False


async def _preset(repl: ReplHost, args: list[str]) -> bool:
    if len(args) != 1:
        repl.say("usage: /preset NAME")
        return False
    await repl.engine.apply_preset(args[0])
    repl.say(f"preset {args[0]} applied")
    return False


async def _fork(repl: ReplHost, args: list[str]) -> bool:
    if len(args) > 1 or (args and not (args[0].isdigit() and int(args[0]) >= 1)):
        repl.say("usage: /fork [N] (N: the message to fork after, as `session show` numbers)")
    elif repl.engine.status().session_id is None:
        repl.say("no session to fork")
    else:
        await repl.engine.agent.fork(at=int(args[0]) if args else None)
    return False


async def _compact(repl: ReplHost, args: list[str]) -> bool:
    if "compact" in repl.agent_commands():  # the agent compacts its own context (claude, ACP)
        await repl.run_turn("/compact")
    else:
        repl.say(await repl.engine.compact())
    return False


async def _init(repl: ReplHost, args: list[str]) -> bool:
    from avatar.cli.repl.init_command import init

    return await init(repl, args)


async def _clear(repl: ReplHost, args: list[str]) -> bool:
    # As in Claude Code: a new conversation (Ctrl-L clears the screen alone).
    sys.stdout.write("\x1b[2J\x1b[H")
    await repl.engine.agent.new()
    return False


async def _status(repl: ReplHost, args: list[str]) -> bool:
    status = repl.engine.status()
    repl.say(f"provider: {status.provider or '-'}")
    repl.say(f"model: {status.model or 'the provider default'}")
    session = f"{status.session_id} ({status.how})" if status.session_id else "none yet"
    repl.say(f"session: {session}")
    if status.session_id is not None:
        repl.say(f"capabilities: {', '.join(status.capabilities) or 'none'}")
        for key, value in status.facts.items():
            if key != "model":
                repl.say(f"{key}: {value}")
    return False


async def _cost(repl: ReplHost, args: list[str]) -> bool:
    from avatar.cli.repl.cost import show_cost

    return await show_cost(repl, args)


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/help", "", "this list", _help, while_busy=True),
    SlashCommand(
        "/sessions", "[--all]", "sessions of this project (--all: every directory)", _sessions, True
    ),
    SlashCommand("/session", "", "the current session", _session, while_busy=True),
    SlashCommand(
        "/resume",
        "[ID]",
        "resume a session (any provider; no id: pick one)",
        _resume,
        activity="opening the session",
    ),
    SlashCommand(
        "/continue",
        "",
        "the newest session of this provider here",
        _continue,
        activity="opening the session",
    ),
    SlashCommand("/new", "", "a fresh session on this provider", _new, activity="starting"),
    SlashCommand(
        "/worktree",
        "[NAME]",
        "a fresh session in a new git worktree of this repository",
        _worktree,
        activity="starting",
    ),
    SlashCommand(
        "/provider",
        "NAME [--fresh | --new | --import] [--summarize]",
        "switch provider with a handoff (back to its earlier session unless --new; "
        "--fresh: carry nothing; --summarize: the agent left adds its own summary)",
        _provider,
        activity="starting {arg}",
    ),
    SlashCommand("/model", "NAME", "switch model", _model),
    SlashCommand("/preset", "NAME", "apply a preset from config", _preset),
    SlashCommand("/search", "QUERY", "find sessions by what was said in them", _search),
    SlashCommand("/rename", "NAME", "name the current session", _rename),
    SlashCommand(
        "/fork", "[N]", "fork the session (N: keep messages 1..N)", _fork, activity="forking"
    ),
    SlashCommand(
        "/compact",
        "",
        "compact the context (native, or the agent's own /compact)",
        _compact,
        activity="compacting",
    ),
    SlashCommand(
        "/init",
        "",
        "the agent studies the project and writes its instructions file (AGENTS.md, CLAUDE.md…)",
        _init,
        activity="starting /init",
    ),
    SlashCommand(
        "/rewind",
        "[N [--files | --conversation]]",
        "files and conversation back to before turn N (no N: the turns, and pick one); Esc Esc too",
        _rewind,
        activity="rewinding",
    ),
    SlashCommand(
        "/diff",
        "[N | --rewind N]",
        "every edit of this session (N: edit N alone; --rewind N: what rewinding undoes)",
        _diff,
        while_busy=True,
    ),
    SlashCommand(
        "/clear",
        "",
        "a new session on this provider, on a clear screen (Ctrl-L: clear the screen only)",
        _clear,
        activity="starting",
    ),
    SlashCommand(
        "/status",
        "",
        "provider, model, session, context use, tokens and cost",
        _status,
        while_busy=True,
    ),
    SlashCommand(
        "/cost",
        "",
        "tokens and cost of this session and of today, per provider (avatar's records)",
        _cost,
        while_busy=True,
    ),
    SlashCommand(
        "/quit",
        "",
        "leave (Ctrl-D too); Ctrl-C interrupts a running turn",
        _quit,
        while_busy=True,
        aliases=("/exit",),
    ),
)

_BY_NAME = {name: c for c in COMMANDS for name in (c.name, *c.aliases)}


def lookup(name: str) -> SlashCommand | None:
    """The command called `name` (or one of its aliases)."""
    return _BY_NAME.get(name.lower())


def names() -> list[str]:
    """Every command name and alias, for completion."""
    return list(_BY_NAME)


def help_text() -> str:
    """The `/help` text, one line per command."""
    lines = []
    for c in COMMANDS:
        head = ", ".join((f"{c.name} {c.usage}".rstrip(), *c.aliases))
        lines.append(f"{head:<25} {c.help}")
    return "\n".join(lines)
