"""Every event of a turn, with tool calls and a permission handler that decides by path.

    python examples/stream_events.py [-p PROVIDER] [--allow-under DIR] "create notes/todo.txt"

Actions that change something are asked of `decide()` (the policy is `ask`): it allows writes
and edits whose title names a path under `--allow-under` (default: `notes/`) once, and denies
everything else. Each event is printed as one line.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from avatar import Engine
from avatar.events import (
    Error,
    PermissionRequested,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    Usage,
)
from avatar.permissions import Answer, PermissionHandler


def make_handler(allowed_prefix: str) -> PermissionHandler:
    """A handler allowing, once, actions whose title names a path under `allowed_prefix`."""

    async def decide(request: PermissionRequested) -> Answer:
        verdict: Answer = "allow" if allowed_prefix in request.title else "deny"
        print(f"[permission] {request.title} -> {verdict}")
        return verdict

    return decide


async def main(provider: str | None, allow_under: str, prompt: str) -> int:
    engine = Engine.from_config(".", provider=provider, permission="ask")
    engine.set_permission_handler(make_handler(allow_under))
    answer: list[str] = []
    try:
        await engine.open()
        async for event in engine.send(prompt):
            if isinstance(event, TextDelta) and not event.replay:
                answer.append(event.text)
            elif isinstance(event, ToolCallStarted):
                print(f"[tool] {event.title or event.name} ...")
            elif isinstance(event, ToolCallFinished):
                print(f"[tool] {'failed' if event.is_error else 'done'}")
            elif isinstance(event, Usage):
                print(f"[usage] in={event.input_tokens} out={event.output_tokens}")
            elif isinstance(event, Error):
                print(f"[error] {event.message}")
                return 1
            elif isinstance(event, TurnFinished):
                print(f"[answer] {''.join(answer).strip()}")
                print(f"[finished] {event.stop_reason}")
        return 0
    finally:
        await engine.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--provider")
    parser.add_argument("--allow-under", default="notes/")
    parser.add_argument("prompt")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.provider, args.allow_under, args.prompt)))
