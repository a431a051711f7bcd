"""avatar: one terminal and one engine for every coding agent.

The public API is `avatar.Engine` (see `avatar.engine.engine`); it is imported on first use, so
`import avatar` stays as cheap as reading the version.
"""

from __future__ import annotations

from avatar.core.version import __version__

# Not `typing`: importing it costs `avatar --version` ~20 ms (mypy reads the name alone).
TYPE_CHECKING = False

__all__ = ["Engine", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from avatar.engine.engine import Engine


def __getattr__(name: str) -> Any:
    if name == "Engine":
        from avatar.engine.engine import Engine

        return Engine
    raise AttributeError(f"module 'avatar' has no attribute {name!r}")
