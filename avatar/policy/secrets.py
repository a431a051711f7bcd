"""The one secret detector (docs/design.md §10): every output avatar writes or prints from a session
(exports, archives, the search index and its snippets, handoffs, `session show/info/list`,
titles and the listing caches, avatar's records, the REPL's history file) passes through it.

`SecretDetector` masks, each value replaced by `MASK`:

- the values of environment variables that hold keys: the names given (the native model
  registry's `api_key_env`s) and any name containing KEY, TOKEN, SECRET, PASSWORD, PASSWD or
  CREDENTIAL, when the value has at least `MIN_SECRET_LENGTH` characters and is not the path
  of a file;
- then every secret shape of `avatar.policy.secret_rules` (provider keys and tokens, password
  assignments, Authorization headers, passwords in URLs, PEM private keys), in linear time.

Titles are made where no engine is at hand: `title_source` masks with the detector of this
process's environment.
"""

from __future__ import annotations

import os
from functools import cache

from avatar.policy.secret_names import is_secret_name
from avatar.policy.secret_rules import (
    MASK,
    MIN_QUOTED,
    MIN_SECRET_LENGTH,
    is_secret_key,
    is_secret_value,
    mask_shapes,
)

# Not `typing` at run time: this module loads with every listing that derives a title.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

__all__ = [
    "MASK",
    "MIN_QUOTED",
    "MIN_SECRET_LENGTH",
    "SecretDetector",
    "is_secret_key",
    "is_secret_name",
    "mask_secrets",
    "mask_values",
    "process_detector",
    "secret_values",
    "title_source",
    "url_password",
    "url_shown",
]


def longest_first(values: Iterable[str]) -> list[str]:
    """Secret values in the order to mask them: a key that contains another is masked whole."""
    return sorted(set(values), key=len, reverse=True)


def secret_values(*envs: Mapping[str, str], names: Iterable[str] = ()) -> list[str]:
    """The values in `envs` of the variables `names` and of those `is_secret_name` picks,
    long enough to be keys and not the path of a file (`GOOGLE_APPLICATION_CREDENTIALS`
    names one: masking it would only blank paths), longest first."""
    wanted = set(names)
    return longest_first(
        v
        for env in envs
        for n, v in env.items()
        if (n in wanted or is_secret_name(n))
        and len(v) >= MIN_SECRET_LENGTH
        and not (v.startswith(("/", "~")) and os.path.exists(os.path.expanduser(v)))
    )


def url_password(url: str) -> str | None:
    """The password a URL carries (`http://user:PASSWORD@host/`: a proxy's login in a
    `*_BASE_URL`), as written and decoded; None without one."""
    from urllib.parse import unquote, urlsplit

    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return password and unquote(password)


def url_shown(url: str) -> str:
    """`url` as notices and errors show it: its password, if any, replaced by `MASK`."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return mask_shapes(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    login = parts.netloc.rpartition("@")[0].partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{login}:{MASK}@{host}"))


def mask_values(text: str, values: Iterable[str]) -> str:
    """`text` with each of `values` (`longest_first`) replaced by `MASK`."""
    for secret in values:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class SecretDetector:
    """Finds and masks secrets in text: the key values of the environments `envs`, then
    every shape of `avatar.policy.secret_rules`.

    `names`: variables known to hold keys whatever they are called (the native model
    registry's `api_key_env`s); any name `is_secret_name` picks counts as well.
    """

    def __init__(self, *envs: Mapping[str, str], names: Iterable[str] = ()) -> None:
        self.values = secret_values(*envs, names=names)

    def mask(self, text: str) -> str:
        """`text` with every secret replaced by `MASK` (names, quotes and URLs kept)."""
        return mask_shapes(mask_values(text, self.values))

    def mask_known(self, text: str) -> str:
        """`text` with only the environment's key values masked: what the native agent's
        live tool output gets (a key shape in a file the model reads stays, so it can edit
        the file)."""
        return mask_values(text, self.values)

    def mask_data(self, value: Any) -> Any:
        """Every string inside JSON-like data masked, dictionary keys included; the string
        value of a secret-sounding key (`{"password": "…"}`) is masked whole."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {
                self.mask(str(k)): MASK
                if isinstance(v, str) and is_secret_key(str(k)) and is_secret_value(v)
                else self.mask_data(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.mask_data(v) for v in value]
        return value


@cache
def _detector_of(env: tuple[tuple[str, str], ...]) -> SecretDetector:
    return SecretDetector(dict(env))


def process_detector() -> SecretDetector:
    """The detector of this process's environment, for text made where no engine is at hand
    (the titles a store derives from a session's first words)."""
    return _detector_of(tuple(sorted((n, v) for n, v in os.environ.items() if is_secret_name(n))))


def mask_secrets(text: str) -> str:
    """`text` masked by `process_detector()`."""
    return process_detector().mask(text)


#: How much of a message a title is made from: masked whole before the title is cut from it,
#: so no secret is cut in two with a piece left showing.
TITLE_SOURCE_CHARS = 4096


def title_source(text: str) -> str:
    """The start of `text` a title is cut from, secrets masked (`mask_secrets`)."""
    return mask_secrets(text[:TITLE_SOURCE_CHARS])
