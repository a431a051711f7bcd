"""What a command that fails prints and ends with (docs/design.md §3, the output contract): one
stderr line `avatar: <message>` (an agent's words in it made inert at a terminal), exit 2 for
usage, 1 for the rest, 130 when interrupted; never a traceback unless AVATAR_DEBUG asks."""

from __future__ import annotations

import errno
import os
import sys

import click

from avatar.core.errors import AvatarError


def say_error(message: str) -> None:
    """Print the one-line error of the output contract (`avatar: <message>`)."""
    from avatar.policy.terminal_text import for_terminal

    sys.stderr.write(for_terminal(f"avatar: {message}\n", sys.stderr))
    sys.stderr.flush()


#: Errors of a filesystem that takes no more writes (read-only, full, over quota, no access).
_WRITE_ERRNOS = frozenset(
    {errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EFBIG}
)


def failed(e: Exception | KeyboardInterrupt) -> int:
    """What a command that raised `e` ends with: its one stderr line said, its exit code
    (never a traceback, unless AVATAR_DEBUG asks for one)."""
    if isinstance(e, click.exceptions.Exit):
        return e.exit_code
    if isinstance(e, click.exceptions.Abort | KeyboardInterrupt):
        return 130
    if isinstance(e, click.ClickException):
        say_error(e.format_message())
        return 2
    if isinstance(e, AvatarError):
        say_error(str(e))
        return e.exit_code
    if isinstance(e, BrokenPipeError):
        # The reader went away (`avatar session list | head`): not an error worth a line.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if os.environ.get("AVATAR_DEBUG"):
        raise e
    if isinstance(e, OSError):  # disk trouble ($AVATAR_HOME read-only or full): one clear line
        what = "cannot write" if e.errno in _WRITE_ERRNOS else "cannot use"
        say_error(f"{what} {e.filename or 'a file'}: {e.strerror or e}")
        return 1
    say_error(f"internal error: {type(e).__name__}: {e} (set AVATAR_DEBUG=1 for details)")
    return 1
