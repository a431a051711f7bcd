"""File access an ACP agent asks the client for, confined to the session's directories.

Reads are allowed under `scope.read` (relative to the session cwd) and the added directories;
writes under `scope.write` and the added directories; `scope.deny` globs win over both.
Symlinks are resolved first, so a link inside the cwd cannot reach outside it.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Literal

from avatar.config import Scope

Access = Literal["read", "write"]


class AccessDenied(Exception):
    """A path the agent may not touch; the message is what the agent gets to read."""


def _resolve(path: Path) -> Path:
    # strict=False: a file about to be written need not exist yet.
    return Path(os.path.realpath(path))


def _glob_match(rel: str, pattern: str) -> bool:
    """Match a cwd-relative POSIX path against a deny glob (`**` spans directories)."""
    pattern = pattern.strip().removeprefix("./")
    if not pattern:
        return False
    # fnmatch's `*` also crosses `/`, which is what a deny list wants (`.git/**`, `secrets/*`).
    if fnmatch.fnmatchcase(rel, pattern):
        return True
    # `**/.env` must also match `.env` at the top; `dir/**` must match `dir` itself.
    if pattern.startswith("**/") and fnmatch.fnmatchcase(rel, pattern[3:]):
        return True
    if pattern.endswith("/**"):
        base = pattern[:-3]
        if rel == base or fnmatch.fnmatchcase(rel, base) or rel.startswith(base + "/"):
            return True
    # A pattern without a slash names a file anywhere (like .gitignore).
    return "/" not in pattern and fnmatch.fnmatchcase(PurePosixPath(rel).name, pattern)


class FileAccess:
    """Decides and performs the agent's `fs/read_text_file` and `fs/write_text_file` calls."""

    def __init__(self, cwd: Path, additional_dirs: Sequence[Path], scope: Scope) -> None:
        self.cwd = _resolve(cwd)
        self.extra = [_resolve(self.cwd / d) for d in additional_dirs]
        self.scope = scope

    def roots(self, access: Access) -> list[Path]:
        """The directories `access` is allowed under."""
        entries = self.scope.read if access == "read" else self.scope.write
        return [_resolve(self.cwd / e) for e in entries] + self.extra

    def check(self, path: str, access: Access) -> Path:
        """The resolved path when `access` to it is allowed; AccessDenied otherwise."""
        if not path:
            raise AccessDenied("empty path")
        raw = Path(path)
        target = _resolve(raw if raw.is_absolute() else self.cwd / raw)
        roots = self.roots(access)
        if not any(target == r or target.is_relative_to(r) for r in roots):
            where = ", ".join(str(r) for r in roots) or "nowhere"
            raise AccessDenied(
                f"{access} access to {path} refused: outside the session's directories ({where})"
            )
        base = (
            self.cwd
            if target.is_relative_to(self.cwd)
            else next((r for r in self.extra if target.is_relative_to(r)), None)
        )
        if base is not None:
            rel = target.relative_to(base).as_posix()
            for pattern in self.scope.deny:
                if _glob_match(rel, pattern):
                    raise AccessDenied(
                        f"{access} access to {path} refused by scope.deny ({pattern})"
                    )
        return target

    def read(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """The file's text, from 1-based `line` for `limit` lines when given."""
        target = self.check(path, "read")
        try:
            text = target.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            raise AccessDenied(f"{path}: no such file") from None
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
        target = self.check(path, "write")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        except IsADirectoryError:
            raise AccessDenied(f"{path}: is a directory") from None
        except OSError as e:
            raise AccessDenied(f"{path}: {e.strerror or e}") from None
