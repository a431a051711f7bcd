"""Errors avatar shows to users: each one renders as a single `avatar: <message>` line."""

from __future__ import annotations


class AvatarError(Exception):
    """Base of every error meant for the user; `exit_code` is what the CLI exits with."""

    exit_code = 1


class UsageError(AvatarError):
    """The user asked for something malformed: unknown provider, bad id, ambiguous prefix."""

    exit_code = 2


def utf8_text(text: str, what: str = "the prompt") -> str:
    """`text` if it can be written as UTF-8; a `UsageError` otherwise. Bytes that are not UTF-8
    (a Latin-1 terminal, a binary file on stdin) reach Python as lone surrogates, which no
    session file, index or agent can take."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UsageError(
            f"{what} is not valid UTF-8 (byte {ord(text[e.start]) & 0xFF:#04x} at character"
            f" {e.start + 1}); send it in UTF-8"
        ) from None
    return text


class ConfigError(UsageError):
    """A configuration file or value is invalid (`<file>:<line>: <key>: <problem>`)."""


class NotSupportedError(AvatarError):
    """A provider lacks a session capability (resume, fork, delete, ...)."""

    exit_code = 2

    def __init__(self, provider: str, operation: str) -> None:
        super().__init__(f"{operation} is not supported by {provider}")
        self.provider = provider
        self.operation = operation


class ProviderError(AvatarError):
    """An agent or model endpoint failed: spawn error, crash, protocol or HTTP error."""

    exit_code = 1

    def __init__(self, message: str, stderr_tail: str | None = None) -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


class SessionNotFoundError(UsageError):
    """No session matches the given id or prefix."""
