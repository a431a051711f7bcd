"""The native tools' side of the one scope policy (`avatar.policy.scope`): a refusal is a
`ToolError`, which the model reads as the tool's result. Files are read and written through
`avatar.policy.opened` (opened beneath the project in one step, checked on what was opened):
another agent in the same project could otherwise swap a checked path for a symlink."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from avatar.native.tools.errors import ToolError
from avatar.policy import opened
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

    def open_read(self, path: str) -> BinaryIO:
        """The file, open for reading (`avatar.policy.opened.open_read`); a refusal is a
        `ToolError`."""
        try:
            return opened.open_read(self, path)
        except ScopeDenied as e:
            raise ToolError(str(e)) from None

    def open_judged(self, real: Path) -> BinaryIO:
        """A file a walk let the model read (`avatar.policy.opened.open_judged`); a refusal
        is a `ToolError`."""
        try:
            return opened.open_judged(self, real)
        except ScopeDenied as e:
            raise ToolError(str(e)) from None

    def write_file(self, path: str, data: bytes) -> bool:
        """Write the file (`avatar.policy.opened.write_file`); whether it existed. A refusal
        is a `ToolError`."""
        try:
            return opened.write_file(self, path, data)
        except ScopeDenied as e:
            raise ToolError(str(e)) from None

    def check_command(self, command: str) -> None:
        """Raise a `ToolError` unless every command in `command` is allowed."""
        try:
            super().check_command(command)
        except ScopeDenied as e:
            raise ToolError(str(e)) from None
