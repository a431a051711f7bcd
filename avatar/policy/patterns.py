"""Scope patterns (docs/design.md §4): one gitignore-style language for `scope.read`, `scope.write`,
`scope.deny`, the protected paths and the search filters of grep and find.

See `avatar.policy.scope` for the rules of the language; this module only compiles and matches.
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
        elif c == "*":  # as git: `**` not between slashes is a plain `*` (and `***` too)
            out.append("[^/]*")
            while i < n and body[i] == "*":
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


# A search glob, compiled: one part per name of a path, a regex for a name or ANY_NAMES for
# `**` (any number of names, none included).
ANY_NAMES = None
_Glob = tuple[re.Pattern[str] | None, ...]


def _name_regex(glob: str) -> re.Pattern[str]:
    """A regex for one name (no `/`) that cannot backtrack without end, whatever the stars.

    The glob is C0*C1*…*Ck, each C a run of fixed-width pieces (characters, `?`, classes).
    C0 sits at the start and Ck at the end; each Ci between them is taken at its leftmost
    place after the one before, in an atomic group: leaving the most room for the rest is
    never worse, and nothing is tried twice, so matching is linear in the name (times the
    glob). A backtracking `[^/]*a[^/]*a…` took hours on `*a*a*a*a*a*a*a*b` and a long name.
    """
    chunks: list[str] = [""]
    i = 0
    while i < len(glob):
        if glob[i] == "*":
            while i < len(glob) and glob[i] == "*":
                i += 1
            chunks.append("")
            continue
        j = i + 2 if glob[i] == "\\" else i + 1
        if glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            j = end + 1
        chunks[-1] += glob[i:j]
        i = j
    try:
        parts = [_translate(c) for c in chunks]
        if len(parts) == 1:
            return re.compile(parts[0] + r"\Z", _FLAGS)
        middle = "".join(f"(?>[^/]*?{p})" for p in parts[1:-1])
        return re.compile(f"{parts[0]}{middle}[^/]*{parts[-1]}\\Z", _FLAGS)
    except re.error:  # a malformed class: the name literally
        return re.compile(re.escape(glob) + r"\Z", _FLAGS)


@lru_cache(maxsize=256)
def _search_glob(pattern: str) -> _Glob:
    pat = pattern.strip().removeprefix("./").strip("/")
    if pat in ("", "."):
        return (ANY_NAMES,)
    names = pat.split("/")
    if not _GLOB_CHARS.intersection(pat):  # a plain path: itself and what is below it
        return (*(re.compile(re.escape(n) + r"\Z", _FLAGS) for n in names), ANY_NAMES)
    return tuple(ANY_NAMES if n == "**" else _name_regex(n) for n in names)


def glob_match(pattern: str, rel: str) -> bool:
    """A search filter (the `glob` of grep, the pattern of find), not a scope pattern: does
    the whole of `rel` match? `*` stays within a name, `**/` and `/**` span directories, and a
    plain path also matches what is below it. Linear in the path, whatever the pattern."""
    names = rel.split("/")
    reached = {0}  # how many names the parts so far can have taken
    for part in _search_glob(pattern):
        if part is ANY_NAMES:
            reached = set(range(min(reached), len(names) + 1))
        else:
            reached = {n + 1 for n in reached if n < len(names) and part.match(names[n])}
        if not reached:
            return False
    return len(names) in reached
