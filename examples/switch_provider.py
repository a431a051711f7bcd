"""Talk to one provider, then switch to another mid-conversation without losing the thread.

    python examples/switch_provider.py native codex "my name is Ada" "what is my name?"

The first prompt goes to the first provider; `switch_provider()` opens a session on the
second, seeded with a handoff of the conversation so far, and the second prompt goes there.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from avatar import Engine
from avatar.events import TextDelta


async def say(engine: Engine, prompt: str) -> None:
    async for event in engine.send(prompt):
        if isinstance(event, TextDelta) and not event.replay:
            print(event.text, end="", flush=True)
    print()


async def main(first: str, second: str, prompt_a: str, prompt_b: str) -> int:
    engine = Engine.from_config(".", provider=first)
    try:
        started = await engine.open()
        print(f"[{started.provider} {started.session_id}]")
        await say(engine, prompt_a)
        switched = await engine.switch_provider(second, handoff=True)
        print(f"[{switched.provider} {switched.session_id}]")
        await say(engine, prompt_b)
        return 0
    finally:
        await engine.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("first", "second", "prompt_a", "prompt_b"):
        parser.add_argument(name)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.first, args.second, args.prompt_a, args.prompt_b)))
