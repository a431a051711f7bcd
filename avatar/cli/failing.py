"""What a command that fails prints and ends with (docs/design.md §3, the output contract): one
stderr line `avatar: <message>` (an agent's words in it made inert at a terminal), exit 2 for
usage, 1 for the rest, 130 when interrupted; never a traceback unless AVATAR_DEBUG asks."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import NoReturn

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


def run_command(command: Callable[[], object]) -> NoReturn:
    """Run a command with the output contract: its exit code (an int it returns, else 0), or
    what `failed` makes of what it raised."""
    try:
        result = command()
    except (Exception, KeyboardInterrupt) as e:
        raise SystemExit(failed(e)) from None
    raise SystemExit(result if isinstance(result, int) else 0)


def failed(e: Exception | KeyboardInterrupt) -> int:
    """What a command that raised `e` ends with: its one stderr line said, its exit code
    (never a traceback, unless AVATAR_DEBUG asks for one)."""
    if isinstance(e, KeyboardInterrupt):
        return 130
    # click's errors, where click ran (a one-shot `chat` may run without it: avatar.cli.early).
    click = sys.modules.get("click")
    if click is not None:
        if isinstance(e, click.exceptions.Exit):
            return int(e.exit_code)
        if isinstance(e, click.exceptions.Abort):
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
