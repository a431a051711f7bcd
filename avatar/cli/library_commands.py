"""`avatar session search | rename | prune`: the session library across every provider.

Search prints, for each session, a line with provider, id, age and title (a name given with
`rename` wins), then the matching snippet with the match in bold at a terminal; `--json`
prints the array of docs/design.md §3, best match first (then the newest). Prune lists what it would
delete, then asks (or takes `--yes`). The `session` group in `avatar.cli.commands` loads
these commands when one of them is asked for.
"""

from __future__ import annotations

import json
import re
import sys
from datetime import timedelta
from typing import TYPE_CHECKING

import click

from avatar.cli.output.table import session_line
from avatar.cli.sessions import warn_skipped
from avatar.core.errors import UsageError
from avatar.policy.terminal_text import for_terminal, inert, is_terminal

if TYPE_CHECKING:
    from avatar.cli.state import AppState
    from avatar.engine.engine import Deleted, Engine, SearchHow
    from avatar.sessions.types import SessionInfo

_AGE = re.compile(r"(\d+)([smhdw])")
_UNITS = {
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}
_BOLD, _PLAIN = "\x1b[1m", "\x1b[22m"


def parse_age(text: str, flag: str) -> timedelta:
    """AGE as docs/design.md §3 writes it (`30d`, `12h`, `2w`; `30m`, `90s` too); a usage error
    naming `flag` else."""
    found = _AGE.fullmatch(text.strip().lower())
    if not found:
        raise UsageError(f"{flag}: not an age: {text!r} (use e.g. 30d, 12h or 2w)")
    return int(found.group(1)) * _UNITS[found.group(2)]


# An option search does not know (`--dry-run`) is a word to look for, as after `--`.
@click.command("search", context_settings={"ignore_unknown_options": True})
@click.argument("query", nargs=-1, required=True)
@click.option("--provider", help="Only this provider's sessions.")
@click.option("--all-projects", is_flag=True, help="Sessions of every directory.")
@click.option("--since", metavar="AGE", help="Only sessions updated within AGE (30d, 12h, 2w).")
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Sessions to show."
)
@click.option(
    "--offset", type=click.IntRange(min=0), default=0, help="Skip this many matches first."
)
@click.option("--json", "json_out", is_flag=True, help="A JSON array, best match first.")
@click.pass_obj
def session_search(
    state: AppState,
    query: tuple[str, ...],
    provider: str | None,
    all_projects: bool,
    since: str | None,
    limit: int,
    offset: int,
    json_out: bool,
) -> int:
    """Find sessions of every provider by what was said in them ("a phrase", foo_bar())."""
    age = parse_age(since, "--since") if since is not None else None
    engine = state.engine()
    words = " ".join(query)
    how: SearchHow = {"provider": provider or state.provider, "all_projects": all_projects}
    how["since"] = age
    hits = engine.search(words, **how | {"limit": limit, "offset": offset, "progress": _indexing})
    warn_skipped(engine)
    if json_out:
        sys.stdout.write(json.dumps([h.to_public() for h in hits], ensure_ascii=False) + "\n")
        return 0
    if not hits:
        where = "" if all_projects else f" in {engine.cwd} (--all-projects: everywhere)"
        found = len(engine.search(words, **how | {"limit": offset})) if offset else 0
        if found:
            some = f"{found} session{'s' if found != 1 else ''} match{'es' if found == 1 else ''}"
            sys.stderr.write(f"--offset {offset} is past the last match: {some} {words!r}{where}\n")
        else:
            sys.stderr.write(f"no session matches {words!r}{where}\n")
        return 0
    bold = is_terminal(sys.stdout)
    shown = inert if bold else str  # at a terminal: inert text, and avatar's bold around hits
    out = []
    for hit in hits:
        out.append(shown(session_line(hit.session)))
        text, pos, parts = hit.snippet, 0, []
        for start, end in hit.spans if bold else ():
            parts += [shown(text[pos:start]), _BOLD, shown(text[start:end]), _PLAIN]
            pos = end
        out.append("    " + "".join(parts) + shown(text[pos:]))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _indexing(done: int, total: int) -> None:
    """A first index build's progress, on stderr: one line rewritten at a terminal, a line
    each time elsewhere."""
    line = f"indexing sessions for search: {done:,} of {total:,}"
    if is_terminal(sys.stderr):
        sys.stderr.write(f"\r{line}" + ("\n" if done == total else ""))
    else:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()


@click.command("rename")
@click.argument("session_id", metavar="ID")
@click.argument("name", nargs=-1, required=True)
@click.pass_obj
def session_rename(state: AppState, session_id: str, name: tuple[str, ...]) -> int:
    """Name a session (where its provider shows names, and in avatar)."""
    engine = state.engine()
    info = engine.rename(engine.find(session_id, state.provider), " ".join(name))
    sys.stderr.write(
        for_terminal(f"renamed {info.provider} session {info.id}: {info.name}\n", sys.stderr)
    )
    return 0


@click.command("prune")
@click.option("--older-than", metavar="AGE", required=True, help="30d, 12h, 2w; 0d: all.")
@click.option("--provider", help="Only this provider's sessions.")
@click.option("--all-projects", is_flag=True, help="Sessions of every directory.")
@click.option("--dry-run", is_flag=True, help="Only list what would be deleted.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def session_prune(
    state: AppState,
    older_than: str,
    provider: str | None,
    all_projects: bool,
    dry_run: bool,
    yes: bool,
) -> int:
    """Delete this project's sessions not updated for AGE (listed first, then asked)."""
    if dry_run and yes:
        raise UsageError("use either --dry-run or --yes")
    age = parse_age(older_than, "--older-than")
    if not (dry_run or yes or sys.stdin.isatty()):
        raise UsageError("refusing to delete without confirmation; pass --yes (or --dry-run)")
    engine = state.engine()
    library = engine.library
    found = library.prunable(age, provider=provider or state.provider, all_projects=all_projects)
    if not found:
        sys.stderr.write(f"no session is older than {older_than}\n")
        return 0
    for s in found:
        sys.stdout.write(for_terminal(session_line(s) + "\n", sys.stdout))
    count = f"{len(found)} session{'s' if len(found) != 1 else ''}"
    if dry_run:
        sys.stderr.write(f"{count} would be deleted (--dry-run: nothing deleted)\n")
        return 0
    if not yes and not click.confirm(f"delete {count}?"):
        return 1
    return _delete(engine, found)


def _delete(engine: Engine, sessions: list[SessionInfo]) -> int:
    import asyncio

    async def go() -> list[tuple[SessionInfo, Deleted | str]]:
        try:
            return await engine.library.prune(sessions)
        finally:
            await engine.close()

    failed = 0
    for info, done in asyncio.run(go()):
        if isinstance(done, str):
            failed += 1
            line = f"avatar: {info.provider} session {info.id} not deleted: {done}"
        else:
            line = done.line()
        sys.stderr.write(for_terminal(line + "\n", sys.stderr))
    return 1 if failed else 0
