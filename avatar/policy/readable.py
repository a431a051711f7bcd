"""What a sandboxed command may read outside the project (docs/design.md §10): the system's
read-only roots, `/etc` without its secrets, the install prefixes of the programs it runs, and git's
config in the home directory. Everything else outside — the rest of the home, other projects,
avatar's own data — stays unreadable."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path

#: The system's read-only roots, readable by every command.
SYSTEM_ROOTS = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/sys",
    "/dev", "/run/systemd/resolve", "/nix/store", "/home/linuxbrew/.linuxbrew",
)  # fmt: skip
#: What of `/etc` stays unreadable: password hashes, host keys, sudo rules.
ETC_SECRETS = ("shadow", "shadow-", "gshadow", "gshadow-", "ssh", "sudoers", "sudoers.d",
               "ssl/private", "security/opasswd", "krb5.keytab")  # fmt: skip
#: Files in the home directory commands may read (git needs its config, or it warns).
HOME_READABLE = (".gitconfig", ".config/git", ".gitignore_global")


#: `${VAR:-default}`: the variable, else (unset or empty) the default (`~` allowed in it).
_DEFAULTED = re.compile(r"\$\{(\w+):-([^}]*)\}")


def expand(path: str, env: Mapping[str, str]) -> Path | None:
    """`~`, `${VAR:-default}` and `$VARS` expanded against `env`; None when a variable is
    unset."""
    home = env.get("HOME", str(Path.home()))
    text = _DEFAULTED.sub(
        lambda m: env.get(m[1]) or (home + m[2][1:] if m[2].startswith("~") else m[2]), path
    )
    if text.startswith("~"):
        text = home + text[1:]
    if "$" in text:
        for name in sorted({*env, *os.environ}, key=len, reverse=True):
            text = text.replace(f"${name}", env.get(name, ""))
        if "$" in text:
            return None
    return Path(text) if os.path.isabs(text) else None


@cache
def etc_around_secrets() -> tuple[Path, ...]:
    """Everything in `/etc` but `ETC_SECRETS`, as the fewest paths: the entries of each
    directory on the way to a secret, the other directories whole."""
    out: list[Path] = []

    def around(directory: Path, secrets: list[str]) -> None:
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        for name in names:
            below = [s.partition("/")[2] for s in secrets if s.partition("/")[0] == name]
            if name in secrets:
                continue
            if below and (directory / name).is_dir():
                around(directory / name, below)
            else:
                out.append(directory / name)

    around(Path("/etc"), list(ETC_SECRETS))
    return tuple(out)


def etc_secrets() -> list[Path]:
    """The `ETC_SECRETS` this machine has."""
    return [p for p in (Path("/etc", s) for s in ETC_SECRETS) if p.exists()]


@cache
def program_prefixes(
    search_path: str, home: Path, writable: tuple[Path, ...] = ()
) -> tuple[Path, ...]:
    """Directories a command needs to read to run the programs on `search_path`: each `PATH`
    directory and, for a `bin`/`shims` directory, the install prefix above it (a virtualenv, a
    node_modules, a pyenv version) — but never the home directory, what lies above it, or a
    directory right in it. A symlinked program (pipx's `~/.local/bin/black` → its venv) adds
    its target's directory (and prefix) too, when the target is a program.

    Never from a place a walled process can write (`writable`: the project, the added and the
    private temp directories, the agents' state directories): a `PATH` directory there — an
    activated `.venv/bin` in the project — is skipped with its symlinks, so a link planted in
    it (`ln -s ~/.ssh .venv/bin/x`) cannot widen what the next command reads. (A program there
    runs all the same: the project is readable; one linked from there into the home needs
    `scope.read_outside`.)"""
    out: list[Path] = []
    untrusted = [Path(os.path.realpath(w)) for w in writable]

    def trusted(directory: Path) -> bool:
        if home.is_relative_to(directory):  # the home, or above it
            return False
        return not any(directory.is_relative_to(w) for w in untrusted)

    def add(directory: Path) -> None:
        out.append(directory)
        if directory.name in ("bin", "sbin", "shims", ".bin"):
            prefix = directory.parent
            # Not the home, nor what lies above it or right in it (`~/.local` holds avatar's
            # own data and the user's keyrings, `~/.cargo` credentials).
            if trusted(prefix) and prefix.parent != home:
                out.append(prefix)

    for entry in filter(None, search_path.split(os.pathsep)):
        written = Path(os.path.normpath(os.path.abspath(entry)))
        directory = Path(os.path.realpath(entry))
        if (
            not directory.is_dir()
            or not trusted(written)
            or not trusted(directory)
            or any(directory.is_relative_to(root) for root in map(Path, SYSTEM_ROOTS))
        ):
            continue
        add(directory)
        try:
            links = [e for e in os.scandir(directory) if e.is_symlink()]
        except OSError:
            continue
        for link in links[:200]:
            target = Path(os.path.realpath(link.path))
            if not (target.is_file() and os.access(target, os.X_OK)):
                continue  # a program, not a directory or a file to read
            if target.parent != directory and trusted(target.parent):
                add(target.parent)
    return tuple(dict.fromkeys(out))
