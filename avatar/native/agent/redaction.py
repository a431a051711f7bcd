"""The model API keys a native session holds: kept from its tools, masked in what it records.

A tool's shell gets the environment without these variables, and any of their values that
still shows up (a file the model reads, an error message) is replaced before it reaches the
session file, the model or the screen. Only the keys' values are masked here, not every
secret shape (`avatar.policy.secrets`, which does the masking): the model must see a file
it reads as it is to edit it, and what avatar writes out of a session (exports, titles,
records, handoffs) is masked whole on its way out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from avatar.policy.secrets import SecretDetector

if TYPE_CHECKING:
    from avatar.native.models import ModelResolver


class Redactor:
    """Hides the API keys found in one environment."""

    def __init__(self, resolver: ModelResolver, env: Mapping[str, str]) -> None:
        self.names = resolver.registry.key_variables()
        keys = {n: v for n, v in env.items() if n in self.names}
        self.detector = SecretDetector(keys, names=self.names)

    def tool_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` without the key variables: what a tool's shell runs with."""
        return {k: v for k, v in env.items() if k not in self.names}

    def redact(self, text: str) -> str:
        """`text` with every key value replaced by a mask."""
        return self.detector.mask_known(text)
