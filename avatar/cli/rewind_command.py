"""`avatar session rewind ID --to N [--files | --conversation]` (docs/design.md §12): a session's
files, conversation or both back to before turn N, for scripts. The new session's id (when the
conversation was rewound) alone on stdout; what was done on stderr; an error in one line.
Without `--to`, the turns as `/rewind` lists them. Loaded when asked for (the `session` group's
`lazy` commands)."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import click

from avatar.core.errors import AvatarError, UsageError
from avatar.core.times import ago
from avatar.policy.terminal_text import for_terminal

if TYPE_CHECKING:
    from avatar.cli.state import AppState
    from avatar.core.events import BaseEvent


@click.command("rewind")
@click.argument("session_id", metavar="ID")
@click.option(
    "--to", "turn", type=click.IntRange(min=1), metavar="N", help="Back to before turn N."
)
@click.option("--files", "files_only", is_flag=True, help="The files alone.")
@click.option("--conversation", "talk_only", is_flag=True, help="The conversation alone.")
@click.pass_obj
def session_rewind(
    state: AppState, session_id: str, turn: int | None, files_only: bool, talk_only: bool
) -> int:
    """Files and conversation back to before turn N; prints the new session's id."""
    if files_only and talk_only:
        raise UsageError("--files and --conversation: give one, or neither for both")
    engine = state.engine()
    info = engine.find(session_id, state.provider)
    if turn is None:
        if files_only or talk_only:
            raise UsageError("--files and --conversation go with --to N")
        for t in engine.checkpoints.turns(info):
            line = f"{t.number:>3}  {ago(t.at):>8}  {t.prompt[:50]:<50}  {t.summary()}\n"
            sys.stdout.write(for_terminal(line, sys.stdout))
        return 0
    from avatar.cli.output.render import LineRenderer
    from avatar.server.client import live_ids

    if info.id in live_ids():  # (its agent would go on writing what is restored)
        raise AvatarError(
            f"{info.provider} session {info.id} is live in the running server (avatar ps): "
            "rewind it there (/rewind)"
        )
    notices = LineRenderer(json_out=False, out=sys.stderr)

    def shown(event: BaseEvent) -> None:
        if not event.replay:
            notices.on_event(event)

    async def go() -> int:
        engine.subscribe(shown)
        try:
            done = await engine.checkpoints.rewind(
                turn, files=not talk_only, conversation=not files_only, session=info
            )
        finally:
            await engine.close()
        if done.session is not None:
            sys.stdout.write(done.session.session_id + "\n")
        return 0

    return asyncio.run(go())
