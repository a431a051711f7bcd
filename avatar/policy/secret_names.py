"""Which environment variables hold secrets, by their names alone (`avatar.policy.secrets`
masks their values): light enough for what runs before avatar loads (a launch's record)."""

from __future__ import annotations

#: Environment variables whose values hold keys, by name (matched case-blind).
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


def is_secret_name(name: str) -> bool:
    """True for an environment variable name that says it holds a key, token or password."""
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)
