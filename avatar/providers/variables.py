"""The environment variables that change what an agent does: those every agent process reads
(where it finds programs, its home, locale, temporary files, network and certificates, git's
and avatar's own) and those its provider declares (`env`, `login_env`, `model_from`'s `env:`,
the `$VARS` of its state and login paths, `mode_env`, `untrusted_env`, and `env_read`).

The server keys its warm agents on these (`avatar.server.warm`), not on the whole environment:
a terminal of another width (`COLUMNS`), another `TERM` or shell prompt runs on the same agent.
An agent in avatar's own process (native) reads whatever it likes of the environment: every
variable counts for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from avatar.providers.registry import ProviderSpec

#: What every agent process reads that changes what it does.
COMMON = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "NODE_OPTIONS",
        "NODE_PATH",
        "NODE_EXTRA_CA_CERTS",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "SSH_AUTH_SOCK",
        "DOCKER_HOST",
        *(f"{name}_PROXY" for name in ("HTTP", "HTTPS", "NO", "ALL")),
        *(f"{name}_proxy" for name in ("http", "https", "no", "all")),
    }
)
#: Families every agent process reads: the locale, the base directories, git's, avatar's.
COMMON_PREFIXES = ("LC_", "XDG_", "GIT_", "AVATAR_")

_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def declared(spec: ProviderSpec) -> tuple[frozenset[str], tuple[str, ...]]:
    """The names `spec` declares, and the prefixes its `env_read` patterns end in `*` with."""
    names: set[str] = {*spec.env, *spec.login_env, *spec.untrusted_env}
    names.update(s[4:] for s in spec.model_from if s.startswith("env:"))
    paths: Iterable[str] = (
        *spec.model_from,
        *spec.state_dirs,
        *spec.state_protected,
        *spec.state_projects,
        *spec.login_files,
    )
    for path in paths:
        names.update(_VAR.findall(path))
    if spec.mode_env:
        names.add(spec.mode_env)
    prefixes = tuple(p[:-1] for p in spec.env_read if p.endswith("*"))
    names.update(p for p in spec.env_read if not p.endswith("*"))
    return frozenset(names), prefixes


def agent_variables(spec: ProviderSpec) -> Callable[[str], bool]:
    """Whether a variable changes what `spec`'s agent does (see the module docstring)."""
    if spec.transport == "native":
        return lambda name: True
    names, prefixes = declared(spec)
    names |= COMMON
    starts = (*COMMON_PREFIXES, *prefixes)
    return lambda name: name in names or name.startswith(starts)


def agent_environment(spec: ProviderSpec, env: Mapping[str, str]) -> dict[str, str]:
    """The part of `env` that changes what `spec`'s agent does."""
    counts = agent_variables(spec)
    return {name: value for name, value in env.items() if counts(name)}
