"""Where avatar's server keeps its socket: one place for the server, which listens there, and
for the sandbox, which hides it from everything inside the walls (stdlib only: every client
loads it)."""

from __future__ import annotations

import os


def socket_dir(env: dict[str, str] | None = None) -> str:
    """The directory of the user's server socket (not created): `$XDG_RUNTIME_DIR/avatar`, else
    `/tmp/avatar-<uid>`."""
    environ = os.environ if env is None else env
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "avatar")
    return f"/tmp/avatar-{os.getuid()}"
