"""The homes avatar guesses for an agent it has no data for (docs/design.md §10): an agent from
config without `state_dirs` keeps its state, by convention, in `~/.NAME/` or under NAME in the XDG
config, data, state and cache homes, NAME being its provider name or its program's (an ACP
adapter's `-acp` dropped: `pi-acp` runs pi, whose home is `~/.pi/`). Those are the places
outside the project its walls let it write.

A guess is a door opened without the user naming it, so it never opens what would let the
agent act outside its walls: no name below (`NEVER`: launchers, whose name says nothing of the
agent, and the homes of programs whose files run programs or hold credentials: `~/.ssh/`,
`~/.config/git/`, `~/.config/systemd/`, …) nor the homes of the agents avatar knows (the
registry adds their names: their protected files are data only for them); never a file
(`~/.bashrc/` would be `~/.bashrc`), never the home itself, an XDG home or a folder holding
one, and nothing of avatar's own (its config, its data).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path

from avatar.core.config import avatar_home, user_config_path
from avatar.policy.readable import expand

#: The XDG homes (config, data, state, cache): the variable, else its default.
XDG_HOMES = tuple(
    f"${{{var}:-{default}}}"
    for var, default in (
        ("XDG_CONFIG_HOME", "~/.config"),
        ("XDG_DATA_HOME", "~/.local/share"),
        ("XDG_STATE_HOME", "~/.local/state"),
        ("XDG_CACHE_HOME", "~/.cache"),
    )
)

#: A name a home is guessed for: one plain path component.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*(?:\.[A-Za-z0-9_+-]+)*")

#: Names never guessed (compared in lower case, a version's digits dropped: `python3.12`).
NEVER = frozenset(
    {
        # avatar's own
        "avatar",
        # launchers and interpreters: `npx some-agent` keeps nothing in `~/.npx/`
        "sh", "bash", "dash", "zsh", "fish", "ksh", "csh", "tcsh", "nu", "nushell", "xonsh",
        "env", "sudo", "doas", "su", "nice", "nohup", "timeout", "stdbuf", "exec", "script",
        "python", "pypy", "node", "nodejs", "deno", "bun", "bunx", "npx", "npm", "pnpm", "pnpx",
        "yarn", "corepack", "uv", "uvx", "pip", "pipx", "poetry", "pdm", "hatch", "conda",
        "mamba", "micromamba", "ruby", "gem", "bundle", "java", "go", "cargo", "rustup",
        "dotnet", "php", "perl", "lua", "docker", "podman", "nix", "flatpak", "snap", "ssh",
        "mosh", "kubectl", "distrobox", "toolbox", "tmux", "screen",
        # homes whose files run programs or hold credentials outside the walls
        "git", "gnupg", "gpg", "aws", "azure", "gcloud", "kube", "containers", "gh", "netrc",
        "password-store", "keyrings", "pki", "mozilla", "chromium", "google-chrome",
        "systemd", "autostart", "environment.d", "dbus-1", "applications", "vim", "nvim",
        "emacs", "emacs.d", "vscode", "code", "helix", "zed", "direnv", "mise", "asdf", "nvm",
        "pyenv", "rbenv", "nodenv", "sdkman", "bin", "profile", "bashrc", "zshrc", "config",
        "local", "cache", "share", "state",
    }
)  # fmt: skip


def names(provider: str, command: Iterable[str], never: Collection[str] = ()) -> list[str]:
    """The names an agent's homes are guessed from: its provider name, its program's
    basename, and that without an adapter's `-acp`; none in `NEVER` or `never`."""
    program = next(iter(command), "")
    base = os.path.basename(program)
    found = [provider, base, re.sub(r"[-_]acp$", "", base)]
    out: list[str] = []
    for name in found:
        lower = name.lower()
        if not _NAME.fullmatch(name) or {lower, re.sub(r"[\d.]+$", "", lower)} & NEVER:
            continue
        if lower in never:
            continue
        if name not in out:
            out.append(name)
    return out


def entries(found: Iterable[str]) -> tuple[str, ...]:
    """The `state_dirs` entries of the homes of `found` names."""
    return tuple(
        home for name in found for home in (f"~/.{name}/", *(f"{x}/{name}/" for x in XDG_HOMES))
    )


def keep(path: Path, env: Mapping[str, str]) -> bool:
    """May a guessed home at `path` be opened? Not a file, not the home or an XDG home or
    anything holding one, nothing of avatar's own (see the module docstring)."""
    if path.exists() and not path.is_dir():
        return False
    real = Path(os.path.realpath(path))
    home = expand("~", env)
    tops = [home] if home is not None else []
    tops += [p for p in (expand(xdg, env) for xdg in XDG_HOMES) if p is not None]
    tops.append(user_config_path())
    if any(Path(os.path.realpath(top)).is_relative_to(real) for top in tops):
        return False
    data = Path(os.path.realpath(avatar_home()))
    return not (data.is_relative_to(real) or real.is_relative_to(data))
