"""File access an ACP agent asks the client for, confined by the session's scope.

`fs/read_text_file` and `fs/write_text_file` go through the one scope policy
(`avatar.policy.scope.ScopePolicy`): gitignore-style `scope.read`/`scope.write`/`scope.deny`
relative to the session cwd, plus the added directories; deny wins; symlinks and `..` are
resolved first. The file is then opened beneath its root in one step and checked again on
what was opened (`avatar.policy.opened`): avatar runs outside the agent's walls, and a path
the agent changes between the check and the open must not take avatar anywhere else.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from avatar.core.config import Scope
from avatar.policy.denied import ScopeDenied
from avatar.policy.opened import open_read, write_file
from avatar.policy.scope import ScopePolicy

Access = Literal["read", "write"]


class AccessDenied(Exception):
    """A path the agent may not touch; the message is what the agent gets to read, and
    `code` the JSON-RPC error's (invalid params)."""

    code = -32602


class NotFound(AccessDenied):
    """A file that is not there: ACP's "Resource not found" (-32002), which agents read as
    ENOENT (Gemini's write_file of a new file checks it first, and fails on anything else)."""

    code = -32002


class FileAccess:
    """Decides and performs the agent's `fs/read_text_file` and `fs/write_text_file` calls."""

    def __init__(
        self,
        cwd: Path,
        additional_dirs: Sequence[Path],
        scope: Scope,
        *,
        missing_reads_empty: bool = False,
    ) -> None:
        self.policy = ScopePolicy(scope, cwd, additional_dirs)
        self.cwd = self.policy.root
        self.extra = self.policy.extra_roots
        self.scope = scope
        #: A file that is not there reads as empty instead of "Resource not found" (the
        #: `missing_file_empty` quirk: Gemini's write_file cannot create a file otherwise).
        self.missing_reads_empty = missing_reads_empty

    def check(self, path: str, access: Access) -> Path:
        """The resolved path when `access` to it is allowed; AccessDenied otherwise."""
        try:
            return self.policy.check(path, access)
        except ScopeDenied as e:
            raise AccessDenied(str(e)) from None

    def read(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """The file's text, from 1-based `line` for `limit` lines when given."""
        try:
            # Not `read_text`: a FIFO would block the agent's read (and avatar) for good.
            raw = open_read(self.policy, path)
            with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except ScopeDenied as e:
            raise AccessDenied(str(e)) from None
        except FileNotFoundError:
            if self.missing_reads_empty:
                return ""
            raise NotFound(f"Resource not found: {path} (no such file)") from None
        except IsADirectoryError:
            raise AccessDenied(f"{path}: is a directory") from None
        except OSError as e:
            raise AccessDenied(f"{path}: {e.strerror or e}") from None
        if line is None and limit is None:
            return text
        lines = text.splitlines(keepends=True)
        start = max((line or 1) - 1, 0)
        end = start + limit if limit is not None else None
        return "".join(lines[start:end])

    def write(self, path: str, content: str) -> None:
        """Write `content` to the file, creating parent directories inside the allowed root."""
        try:
            write_file(self.policy, path, content.encode("utf-8"))
        except ScopeDenied as e:
            raise AccessDenied(str(e)) from None
        except IsADirectoryError:
            raise AccessDenied(f"{path}: is a directory") from None
        except OSError as e:
            raise AccessDenied(f"{path}: {e.strerror or e}") from None
