"""The tools' JSON Schemas, shipped as data so a run need not generate them.

pydantic builds a schema in a few milliseconds per tool, every run, for every request's tool
list; `schemas.json` holds the same schemas, generated from the argument models. A test
fails if the two drift apart; `python -m avatar.native.tools.schemas` rewrites the file.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FILE = Path(__file__).with_name("schemas.json")


@cache
def shipped() -> dict[str, dict[str, Any]]:
    """The schemas in `schemas.json` by tool name (empty if the file is missing)."""
    try:
        data = json.loads(FILE.read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def generated() -> dict[str, dict[str, Any]]:
    """The schemas as the argument models define them today."""
    from avatar.native.tools import default_tools

    return {tool.name: tool.generate_parameters() for tool in default_tools()}


def main() -> None:
    """Rewrite `schemas.json` from the argument models."""
    FILE.write_text(json.dumps(generated(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {FILE}")


if __name__ == "__main__":
    main()
