"""The environment a client carries to the server (stdlib only: every command through the
server loads it).

A command run in the server runs as the client's process would have, and for that it needs
the variables avatar and the agents read, not the whole environment (which may be large, and
is nobody's business but the command's). What is carried:

- at once, with the request, the variables of `NAMES` and those that begin with one of
  `PREFIXES`: avatar's own (`AVATAR_*`), where the user's files are (`HOME`, `XDG_*`), the
  locale, the terminal, the proxies and certificates, the sockets `scope.sockets` may open,
  git's identity, and everything a command inside the walls gets (`COMMAND_ENV`,
  `avatar.policy.sandbox`; a test keeps them in step);
- on the server's asking, the variables the providers declare (`avatar.providers.environment`:
  each provider's `env_read`, `login_env`, `model_from`, `mode_env`, …, the native models' key
  and URL variables, the ones a codex config names), of the names the client listed: the
  server knows the provider data, the client does not read it (it costs a TOML parser).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not `typing`: see avatar/server/protocol.py
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Variables always carried (see the module docstring).
NAMES = frozenset(
    {
        # the user, the system, the shell
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE",
        # the terminal
        "TERM", "COLORTERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLORFGBG", "NO_COLOR",
        "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES", "PAGER", "EDITOR",
        "VISUAL",
        # what commands inside the walls get (`avatar.policy.sandbox.COMMAND_ENV`)
        "VIRTUAL_ENV", "PYTHONPATH", "NODE_PATH", "GOPATH", "JAVA_HOME",
        # the network: proxies and certificates
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
        "no_proxy", "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "NODE_OPTIONS",
        # sockets the walls cover and `scope.sockets` may open (`avatar.policy.sockets`)
        "SSH_AUTH_SOCK", "GNUPGHOME", "DOCKER_HOST", "TMUX", "TMUX_TMPDIR", "DISPLAY",
        "WAYLAND_DISPLAY",
        # avatar's own start-up
        "PYDANTIC_DISABLE_PLUGINS", "PYTHONUNBUFFERED",
    }
)  # fmt: skip
#: Prefixes of variables always carried: avatar's own, the user's directories, the locale,
#: git's identity and settings.
PREFIXES = ("AVATAR_", "XDG_", "LC_", "GIT_")


def always(name: str) -> bool:
    """Whether the variable `name` is carried with every request."""
    return name in NAMES or name.startswith(PREFIXES)


def split(environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """`environ` as a request carries it: the variables always carried, and the names of the
    others (the server asks for those the providers declare)."""
    carried: dict[str, str] = {}
    others: list[str] = []
    for name, value in environ.items():
        if always(name):
            carried[name] = value
        else:
            others.append(name)
    return carried, others


def matches(name: str, declared: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    """Whether `name` is one of the `declared` names or begins with one of `prefixes`."""
    return name in declared or name.startswith(prefixes)
