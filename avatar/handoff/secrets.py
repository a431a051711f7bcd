"""Secrets out of handoff text: the values of key variables in the environment, and strings
shaped like well-known API keys and tokens (DESIGN §3: secrets are redacted in every handoff)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from avatar.native.redaction import (
    MASK,
    MIN_SECRET_LENGTH,
    SECRET_VARIABLES,
    longest_first,
    mask_values,
)

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
_SHAPES = re.compile(
    r"sk-[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic (sk-ant-…), OpenRouter (sk-or-…)
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"  # Slack
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----",
    re.S,
)
# `api_key = "…"`, `password: …`, `Authorization: Bearer …`: the name stays, the value goes.
_ASSIGNED = re.compile(
    r"(?i)((?:api[_-]?key|secret|token|password|passwd)[\"']?\s*[:=]\s*[\"']?|bearer\s+)"
    r"([^\s\"',;]{8,})"
)


class SecretFilter:
    """Masks secrets in text: known values from `env`, and key-shaped strings."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        env = env or {}
        values = {
            value
            for name, value in env.items()
            if (name in SECRET_VARIABLES or _SECRET_NAME.search(name))
            and len(value) >= MIN_SECRET_LENGTH
        }
        self.values = longest_first(values)

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by a mask."""
        text = _SHAPES.sub(MASK, mask_values(text, self.values))
        return _ASSIGNED.sub(lambda m: m.group(1) + MASK, text)
