"""What a search shows of each session it found: the session, and a short piece of its text
with the matched words marked.

The piece is cut here rather than by FTS5's `snippet()`, which scores every fragment against
every hit of a document: a session repeating the query word 100,000 times took two minutes.
This looks at a bounded number of hits, each once. A hit is a word starting with a query
word, or a query literal (a phrase, a code token) as written, case aside.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime

from avatar.sessions.types import SessionInfo

_WORD = re.compile(r"[^\W_]+")  # the index's words: letters and digits
#: Words in a piece (as FTS5's snippet, with `…` where the text goes on).
TOKENS = 12
#: Hits of one document weighed for the best piece; the rest are not looked at.
_HITS_WEIGHED = 2_000


@dataclass
class SearchHit:
    """One session matching a search: the session as last indexed, and where it matched.

    `snippet` is plain text; `spans` are the (start, end) offsets of the matched words in it.
    """

    session: SessionInfo
    snippet: str
    spans: list[tuple[int, int]] = field(default_factory=list)

    def to_public(self) -> dict[str, object]:
        """The object `session search --json` prints (docs/design.md §3)."""
        s = self.session
        out: dict[str, object] = {
            "id": s.id,
            "provider": s.provider,
            "title": s.title,
            "cwd": s.cwd,
            "updated": s.updated.isoformat() if s.updated else None,
            "snippet": self.snippet,
        }
        if s.name:
            out["name"] = s.name
        return out


def query_words(query: str) -> list[str]:
    """The words of a query, folded as the index folds them."""
    return [fold(w) for w in _WORD.findall(query)]


def fold(word: str) -> str:
    """Lower case without diacritics (the index's `unicode61 remove_diacritics 2`)."""
    if word.isascii():
        return word.lower()
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def piece(
    words: list[str], texts: list[str], literals: tuple[str, ...] = ()
) -> tuple[str, list[tuple[int, int]]]:
    """The best piece of the first of `texts` in which a word of the query starts a word
    (or a literal occurs): the fragment of `TOKENS` words holding the most different query
    terms (the earliest of equals), with the spans of the matched terms in it."""
    found_in = _literal_pattern(literals)
    for text in texts:
        found = _best(words, found_in, text)
        if found is not None:
            return found
    return (" ".join(texts[0].split()[:TOKENS]) if texts else ""), []


def _literal_pattern(literals: tuple[str, ...]) -> re.Pattern[str] | None:
    if not literals:
        return None
    longest_first = sorted(literals, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, longest_first)), re.IGNORECASE)


def _matches(words: list[str], token: str) -> bool:
    folded = fold(token)
    return any(folded.startswith(w) for w in words)


def _hits(words: list[str], text: str) -> list[tuple[int, str]]:
    """(offset, query word) of the first hits in `text`: words starting with a query word."""
    if not words:
        return []
    if all(w.isascii() for w in words):
        starts = re.compile(rf"(?<![^\W_])(?:{'|'.join(map(re.escape, words))})", re.IGNORECASE)
        first = itertools.islice(starts.finditer(text), _HITS_WEIGHED)
        found = [(m.start(), m.group().lower()) for m in first]
        if found or text.isascii():
            return found
    # Diacritics or other scripts: every word folded as the index folds it.
    out = []
    for m in _WORD.finditer(text):
        folded = fold(m.group())
        word = next((w for w in words if folded.startswith(w)), None)
        if word is not None:
            out.append((m.start(), word))
            if len(out) == _HITS_WEIGHED:
                break
    return out


def _best(
    words: list[str], literals: re.Pattern[str] | None, text: str
) -> tuple[str, list[tuple[int, int]]] | None:
    hits = _hits(words, text)
    if literals is not None:
        first = itertools.islice(literals.finditer(text), _HITS_WEIGHED)
        hits = sorted(hits + [(m.start(), m.group().casefold()) for m in first])
    if not hits:
        return None
    # The hit with the most different query words in the ~TOKENS words after it.
    reach = TOKENS * 8
    best, best_score = hits[0][0], 0
    for n, (at, _) in enumerate(hits):
        near = {w for pos, w in hits[n : n + TOKENS] if pos - at < reach}
        if len(near) > best_score:
            best, best_score = at, len(near)
    before = list(_WORD.finditer(text, max(0, best - 400), best))[-(TOKENS // 3) :]
    start = before[0].start() if before else best
    tokens = []
    for m in _WORD.finditer(text, start):
        tokens.append(m)
        if len(tokens) > TOKENS:
            break
    more = len(tokens) > TOKENS
    tokens = tokens[:TOKENS]
    end = tokens[-1].end() if tokens else best
    if literals is not None:  # a literal may end past the last word ("foo_bar()")
        for m in literals.finditer(text, start, end + 200):
            if m.start() <= end < m.end():
                end = m.end()
    # The text itself between the words (punctuation kept), on one line.
    shown = " ".join(text[start:end].split())
    lead = "…" if start > 0 and _WORD.search(text, 0, start) else ""
    found = [m.span() for m in _WORD.finditer(shown) if _matches(words, m.group())]
    if literals is not None:
        found = sorted({*found, *(m.span() for m in literals.finditer(shown))})
    spans = [(len(lead) + a, len(lead) + b) for a, b in found]
    return lead + shown + ("…" if more else ""), spans


def hit(
    words: list[str],
    literals: tuple[str, ...],
    row: tuple[str, str, str | None, str | None, str | None, str | None, str | None, str, str],
) -> SearchHit:
    """A hit from a row of the index: the session's columns, its heading and body."""
    provider, sid, cwd, title, name, created, updated, heading, body = row
    info = SessionInfo(
        id=sid,
        provider=provider,
        cwd=cwd,
        title=title,
        created=datetime.fromisoformat(created) if created else None,
        updated=datetime.fromisoformat(updated) if updated else None,
        name=name,
    )
    text, spans = piece(words, [body, heading], literals)
    return SearchHit(info, text, spans)
