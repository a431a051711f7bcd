"""One prompt, one streamed answer: the smallest use of avatar's Python API.

    python examples/one_shot.py [-p PROVIDER] "explain this repo"

The provider is chosen as the `avatar` command chooses it (config, credentials, installed
CLIs) unless `-p` names one; the session id goes to stderr, the answer to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from avatar import Engine
from avatar.events import Error, TextDelta


async def main(provider: str | None, prompt: str) -> int:
    engine = Engine.from_config(".", provider=provider)
    try:
        started = await engine.open()
        print(f"session {started.session_id} on {started.provider}", file=sys.stderr)
        async for event in engine.send(prompt):
            if isinstance(event, TextDelta) and not event.replay:
                print(event.text, end="", flush=True)
            elif isinstance(event, Error):
                print(f"\nerror: {event.message}", file=sys.stderr)
                return 1
        print()
        return 0
    finally:
        await engine.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", "--provider")
    parser.add_argument("prompt")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.provider, args.prompt)))
