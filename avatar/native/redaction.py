"""The model API keys a native session holds: kept from its tools, masked in what it records.

A tool's shell gets the environment without these variables, and any of their values that
still shows up (a file the model reads, an error message) is replaced before it reaches the
session file, the model or the screen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from avatar.native.models import ModelResolver

# Variables holding the keys avatar itself uses; a tool's shell never sees them.
SECRET_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")
MASK = "[redacted]"
# Short values ("test", "x") would mask ordinary words; real keys are long.
MIN_SECRET_LENGTH = 8


def longest_first(values: set[str]) -> list[str]:
    """Secret values in the order to mask them: a key that contains another is masked whole."""
    return sorted(values, key=len, reverse=True)


def mask_values(text: str, values: list[str]) -> str:
    """`text` with each of `values` (`longest_first`) replaced by `MASK`."""
    for secret in values:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def secret_names(resolver: ModelResolver) -> set[str]:
    """Environment variables holding model API keys (built-in and from config)."""
    names = set(SECRET_VARIABLES)
    for model in resolver.registry.all():
        if model.api_key_env:
            names.add(model.api_key_env)
    return names


class Redactor:
    """Hides the API keys found in one environment."""

    def __init__(self, resolver: ModelResolver, env: Mapping[str, str]) -> None:
        self.names = secret_names(resolver)
        values = {v for n in self.names if len(v := env.get(n) or "") >= MIN_SECRET_LENGTH}
        self.values = longest_first(values)

    def tool_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` without the key variables: what a tool's shell runs with."""
        return {k: v for k, v in env.items() if k not in self.names}

    def redact(self, text: str) -> str:
        """`text` with every key value replaced by a mask."""
        return mask_values(text, self.values)
