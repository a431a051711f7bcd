"""Why reopening (or forking) a session failed, and whether a new session may stand in for it.

A new session is opened instead only when the agent said, one way or another, that it does
not have the session (a new one loses nothing it could still reopen), or that it cannot
reopen sessions at all. Any other failure — an internal error, bad parameters, avatar's own
refusal to load — is reported as an error, so the user can retry or look into it instead of
finding a fresh conversation. The rule follows acpx's `shouldFallbackToNewSession`.

What the pinned agents answer for a session they do not have (measured 2026-11 against the
fake model server): claude-agent-acp 0.101 and the old @zed-industries adapters -32002
"Resource not found"; codex-acp 2.6 -32603 with details "no rollout found for thread id …"
(an id that is no UUID: "invalid session id: …"); Gemini CLI 0.61 -32603 "Invalid session
identifier …", or "No previous sessions found for this project." when the project has none;
claude-agent-acp for an id that is no UUID: -32603 "… does not match any session title".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from avatar.bridges.acp.connection import describe_error
from avatar.bridges.acp.jsonrpc import RpcError, WrongAnswer

RESOURCE_NOT_FOUND = -32002
METHOD_NOT_FOUND = -32601
#: How agents say in words that they do not have a session (see the module docstring).
NOT_FOUND_WORDS = re.compile(
    r"not found|no rollout found|no previous sessions found|(?:invalid|unknown) session"
    r"|does not match any session",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Failure:
    """One failed attempt: what it said, and whether it means there is nothing to reopen
    (`missing`: not found, or the agent cannot reopen sessions)."""

    text: str
    missing: bool


def failure(step: str, error: RpcError | WrongAnswer) -> Failure:
    """The failure of `step` (e.g. "session/load of ID") with `error`."""
    text = f"{step} failed: {describe_error(error)}"
    if isinstance(error, WrongAnswer):
        # An agent without the method may answer nothing usable (as acpx takes it).
        return Failure(text, missing=True)
    if error.code in (RESOURCE_NOT_FOUND, METHOD_NOT_FOUND):
        return Failure(text, missing=True)
    return Failure(text, missing=bool(NOT_FOUND_WORDS.search(describe_error(error))))
