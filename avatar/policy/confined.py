"""Is another process confined more than this one? The server asks it of every client (DESIGN
§10, §11): it runs outside avatar's walls, so work it did for a process inside them would be
done without them — a chat under a config of the caller's with `scope.sandbox: off`, a
provider command, `stop`.

A process counts as confined more when it carries a mark that only confinement gives, that
nothing takes away and that every child inherits, and this process lacks it:

- **NoNewPrivs** (`/proc/PID/status`). Every wall sets it: Landlock requires it of an
  unprivileged process, and avatar's walls set it for root too; seccomp filters need it as
  well, so any sandbox of the kind has it. It is the kernel's own statement that the process
  and its children may not gain privileges: a process without it working on their behalf
  would be such a gain. This mark needs nothing of the machine but Linux ≥ 3.5, so it holds
  where Landlock stands alone (no user namespaces).
- **More seccomp filters** than this process has (`Seccomp_filters`): a filter can be added,
  never removed.
- **Another mount or user namespace** (`/proc/PID/ns/mnt`, `ns/user`): the walls draw their
  covered paths in a private mount namespace (and, for users other than root, a user
  namespace); such a process sees another file tree than this one, and may not be shown it.

What cannot be read (the process is gone, or hides its `/proc` entry by making itself
undumpable) counts as confined: the answer is a refusal, never work done on a guess. Where the
server itself runs with NoNewPrivs and without namespaces (a container with
`no-new-privileges` on a kernel without user namespaces), nothing here tells a walled process
from the user's: docs/security.md says so.
"""

from __future__ import annotations

import os
import signal
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Marks:
    """What confines a process, as far as `/proc` tells."""

    no_new_privs: bool
    seccomp_filters: int
    mount_ns: str
    user_ns: str


def marks(pid: int | str) -> Marks:
    """The marks of process `pid` ("self" for this one); OSError when they cannot be read."""
    base = f"/proc/{pid}"
    fields: dict[str, str] = {}
    with open(f"{base}/status", encoding="utf-8", errors="replace") as f:
        for line in f:
            name, _, value = line.partition(":")
            fields[name] = value.strip()
    if "NoNewPrivs" not in fields:
        raise OSError(f"{base}/status does not say NoNewPrivs")
    return Marks(
        no_new_privs=fields["NoNewPrivs"] != "0",
        seccomp_filters=int(fields.get("Seccomp_filters", "0") or 0),
        mount_ns=os.readlink(f"{base}/ns/mnt"),
        user_ns=os.readlink(f"{base}/ns/user"),
    )


def confined_more(pid: int, pidfd: int | None = None) -> bool:
    """True when process `pid` is confined more than this one (see the module's docstring),
    or when that cannot be told. `pidfd` (the peer's, from SO_PEERPIDFD) pins the process:
    if it has exited by the time its marks were read, its pid may name another process since,
    and the answer is True."""
    if sys.platform != "linux":
        return False  # no walls to be inside of
    if pid <= 0:
        return True  # (a peer in a PID namespace this process cannot see)
    try:
        own = marks("self")
    except OSError:
        return True
    try:
        peer = marks(pid)
    except (OSError, ValueError):
        return True
    if pidfd is not None:
        try:
            signal.pidfd_send_signal(pidfd, 0)
        except OSError:
            return True  # gone: what was read may be another process's
    return (
        (peer.no_new_privs and not own.no_new_privs)
        or peer.seccomp_filters > own.seccomp_filters
        or peer.mount_ns != own.mount_ns
        or peer.user_ns != own.user_ns
    )
