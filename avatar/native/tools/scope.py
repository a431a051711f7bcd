"""The native tools' side of the one scope policy (`avatar.policy.scope`): a refusal is a
`ToolError`, which the model reads as the tool's result."""

from __future__ import annotations

import os
from pathlib import Path

from avatar.native.tools.errors import ToolError
from avatar.policy.denied import ScopeDenied
from avatar.policy.scope import Mode, ScopePolicy


class ToolScope(ScopePolicy):
    """`ScopePolicy` whose refusals are `ToolError`s carrying the policy's message."""

    def check(self, path: str | os.PathLike[str], mode: Mode) -> Path:
        """The real path, when `mode` access is allowed; else a `ToolError`."""
        try:
            return super().check(path, mode)
        except ScopeDenied as e:
            raise ToolError(str(e)) from None

    def check_command(self, command: str) -> None:
        """Raise a `ToolError` unless every command in `command` is allowed."""
        try:
            super().check_command(command)
        except ScopeDenied as e:
            raise ToolError(str(e)) from None
