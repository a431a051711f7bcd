"""Unix sockets by path: which ones the walls cover, and which ones `scope.sockets` opens
(docs/design.md §10).

Landlock does not stop a `connect()` to a socket by its path, so a walled process could reach
the user's ssh-agent (and sign with the user's keys), gpg-agent, D-Bus, docker, tmux, the X
server, or avatar's own server, which runs outside the walls. In the process's mount namespace
the stub covers, with blank stand-ins:

- every pathname socket the kernel lists as bound (`/proc/net/unix`) outside the project and
  the added directories;
- the directories where sockets appear later: `XDG_RUNTIME_DIR`, `/run/user/UID`, avatar's
  server socket directory, `/tmp/.X11-unix`, tmux's and ssh-agent's directories.

`scope.sockets` names the ones to leave open: `ssh-agent` (`$SSH_AUTH_SOCK`), `gpg-agent`,
`docker`, or a path.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from avatar.core.runtime import socket_dir
from avatar.policy.readable import expand

#: What a name in `scope.sockets` opens: the variable that names the socket (also handed to
#: commands), else where the socket usually lies.
NAMED: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "ssh-agent": ("SSH_AUTH_SOCK", ()),
    "gpg-agent": (
        None,
        (
            "$GNUPGHOME/S.gpg-agent",
            "~/.gnupg/S.gpg-agent",
            "$XDG_RUNTIME_DIR/gnupg/S.gpg-agent",
            "/run/user/$UID/gnupg/S.gpg-agent",
        ),
    ),
    "docker": ("DOCKER_HOST", ("/var/run/docker.sock", "/run/docker.sock",
                               "$XDG_RUNTIME_DIR/docker.sock")),
}  # fmt: skip


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def socket_dirs(env: Mapping[str, str]) -> list[Path]:
    """The directories where sockets live or appear, for the walls to cover (those that
    exist, symlinks resolved)."""
    uid = os.getuid()
    found: list[str] = [f"/run/user/{uid}", "/tmp/.X11-unix"]
    for source in (env, os.environ):
        runtime = source.get("XDG_RUNTIME_DIR")
        if runtime and os.path.isabs(runtime):
            found.append(runtime)
        found.append(socket_dir(dict(source)))
        tmux = source.get("TMUX_TMPDIR") or "/tmp"
        found.append(os.path.join(tmux, f"tmux-{uid}"))
        agent = source.get("SSH_AUTH_SOCK")
        if agent and os.path.isabs(agent):
            found.append(os.path.dirname(agent))
    found += glob.glob("/tmp/ssh-*")  # ssh-agent's own directories
    out = [_real(Path(p)) for p in found if os.path.isdir(p)]
    return list(dict.fromkeys(out))


def opened(names: Iterable[str], env: Mapping[str, str]) -> tuple[list[Path], dict[str, str]]:
    """The sockets `scope.sockets` opens (each also by its resolved path), and the variables
    that name them (for a command's environment)."""
    paths: list[Path] = []
    variables: dict[str, str] = {}
    full = {**os.environ, **env, "UID": str(os.getuid())}
    for name in names:
        variable, places = NAMED.get(name, (None, (name,)))
        candidates = list(places)
        if variable and full.get(variable):
            value = full[variable]
            variables[variable] = value
            candidates.insert(0, value.removeprefix("unix://"))
        for candidate in candidates:
            path = expand(candidate, full)
            if path is not None and path.exists():
                paths += [path, _real(path)]
                break
    return list(dict.fromkeys(paths)), variables


def to_cover(dirs: Sequence[Path], kept: Sequence[Path], home: Path) -> list[Path]:
    """`dirs` without those the walls must leave alone: a directory inside or holding a kept
    root (the project, an added directory, the private temp dir, a state dir), the home or a
    directory above it, and one inside another covered directory (covering the outer one
    hides it already)."""
    out = []
    for d in dirs:
        if home.is_relative_to(d):
            continue
        if any(k.is_relative_to(d) or d.is_relative_to(k) for k in kept):
            continue
        out.append(d)
    return [d for d in out if not any(d != o and d.is_relative_to(o) for o in out)]
