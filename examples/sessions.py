"""One listing over every provider's sessions here; then resume one by id, or continue.

    python examples/sessions.py                       # list this project's sessions
    python examples/sessions.py --resume ID "go on"   # any provider: the id finds it
    python examples/sessions.py --continue -p codex "and then?"
    python examples/sessions.py --search "retry loop"  # find one by what was said in it

Listing reads each provider's own store and starts no agent. `--resume` takes an id or a
unique prefix and opens the session on the provider that owns it. `--search` looks through
every provider's sessions here (a full-text index kept under `$AVATAR_HOME/cache`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from avatar import Engine
from avatar.events import TextDelta


async def follow_up(engine: Engine, prompt: str, resume: str | None) -> None:
    started = await engine.open(resume=resume, continue_last=resume is None)
    print(f"{started.how} {started.provider} session {started.session_id}")
    async for event in engine.send(prompt):
        if isinstance(event, TextDelta) and not event.replay:
            print(event.text, end="", flush=True)
    print()


async def main(
    provider: str | None, resume: str | None, cont: bool, prompt: str | None, search: str | None
) -> int:
    engine = Engine.from_config(".", provider=provider)
    if search:
        for hit in engine.search(search, provider=provider):
            s = hit.session
            print(f"{s.provider:10} {s.id}  {s.name or s.title or ''}\n           {hit.snippet}")
        return 0
    if not (resume or cont):
        for s in engine.sessions(provider):
            print(f"{s.provider:10} {s.id}  {s.messages:3} messages  {s.title or ''}")
        return 0
    try:
        await follow_up(engine, prompt or "continue", resume)
        return 0
    finally:
        await engine.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--provider")
    parser.add_argument("--resume", metavar="ID")
    parser.add_argument("--continue", dest="cont", action="store_true")
    parser.add_argument("--search", metavar="WORDS")
    parser.add_argument("prompt", nargs="?")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.provider, args.resume, args.cont, args.prompt, args.search)))
