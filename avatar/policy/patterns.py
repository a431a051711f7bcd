"""Scope patterns (DESIGN §4): one gitignore-style language for `scope.read`, `scope.write`,
`scope.deny`, the protected paths and the search filters of grep and find.

See `avatar.scope` for the rules of the language; this module only compiles and matches.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache

_FLAGS = re.DOTALL | (re.IGNORECASE if sys.platform in ("darwin", "win32") else 0)
_GLOB_CHARS = frozenset("*?[\\")
_NEVER = re.compile(r"(?!)")


def _translate(body: str) -> str:
    """Regex source for a glob body: `*`/`?` within a name, `/**/` across directories."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\" and i + 1 < n:
            out.append(re.escape(body[i + 1]))
            i += 2
        elif body.startswith("/**/", i):
            out.append("/(?:.*/)?")
            i += 4
        elif body.startswith("**", i):
            out.append("[^/]*")  # as git: `**` not between slashes is a plain `*`
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (j := body.find("]", i + 2)) != -1:
            inner = body[i + 1 : j]
            negate = inner[:1] in ("!", "^")
            inner = "".join("\\" + ch if ch in "\\[]^" else ch for ch in inner[negate:])
            out.append(f"[^/{inner}]" if negate else f"[{inner}]")
            i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def _compile(pattern: str) -> tuple[re.Pattern[str], re.Pattern[str], bool] | None:
    """(matches the path itself, matches something below it, directories only) for a scope
    pattern, or None when the pattern is the whole project."""
    pat = pattern.strip()
    if not pat:
        return _NEVER, _NEVER, False
    anchored = False
    while pat.startswith("./"):
        anchored, pat = True, pat[2:]
    if pat.startswith("/"):
        anchored, pat = True, pat.lstrip("/")
    dir_only = pat.endswith("/")
    pat = pat.rstrip("/")
    while pat.endswith("/**"):
        anchored, pat = True, pat[:-3].rstrip("/")
    if pat.startswith("**/"):
        anchored = False
        while pat.startswith("**/"):
            pat = pat[3:]
    elif "/" in pat:
        anchored = True
    if pat in ("", ".", "**"):
        return None
    prefix = "" if anchored else "(?:.*/)?"
    try:
        body = _translate(pat)
        itself = re.compile(prefix + body + r"\Z", _FLAGS)
        below = re.compile(prefix + body + "/", _FLAGS)
    except re.error:  # a malformed class: match the text literally
        itself = re.compile(prefix + re.escape(pat) + r"\Z", _FLAGS)
        below = re.compile(prefix + re.escape(pat) + "/", _FLAGS)
    return itself, below, dir_only


def is_whole_project(pattern: str) -> bool:
    """Does scope `pattern` select the whole project (`.`, `/`, `**`, `./**`, …)?"""
    return _compile(pattern) is None


def pattern_matches(pattern: str, rel: str, is_dir: bool = False) -> bool:
    """Does root-relative POSIX path `rel` (`.` for the root) fall under scope `pattern`?"""
    compiled = _compile(pattern)
    if compiled is None:
        return True
    if rel in ("", "."):
        return False
    itself, below, dir_only = compiled
    if below.match(rel) is not None:
        return True
    return itself.match(rel) is not None and (is_dir or not dir_only)


@lru_cache(maxsize=256)
def _search_regex(pattern: str) -> re.Pattern[str]:
    pat = pattern.strip().removeprefix("./").strip("/")
    if not _GLOB_CHARS.intersection(pat):  # a plain path: itself and what is below it
        return re.compile("" if pat in ("", ".") else re.escape(pat) + r"(?:/.*)?\Z", _FLAGS)
    head, pat = ("(?:.*/)?", pat[3:]) if pat.startswith("**/") else ("", pat)
    tail, pat = ("(?:/.*)?", pat[:-3]) if pat.endswith("/**") else ("", pat)
    try:
        return re.compile(head + _translate(pat) + tail + r"\Z", _FLAGS)
    except re.error:
        return re.compile(re.escape(pattern) + r"\Z", _FLAGS)


def glob_match(pattern: str, rel: str) -> bool:
    """A search filter (the `glob` of grep, the pattern of find), not a scope pattern: does
    the whole of `rel` match? `*` stays within a name, `**/` and `/**` span directories, and a
    plain path also matches what is below it."""
    return _search_regex(pattern).match(rel) is not None
