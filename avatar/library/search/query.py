"""What a search query asks for: words, and literal text (phrases and code tokens).

- A plain word (letters and digits) must start a word of the session (the word index).
- A phrase in double quotes, and a token holding anything else (`foo_bar()`, `a.b`,
  `--limit`, `it's`), must occur as written, case aside, as `grep -F` finds it: the trigram
  index (`fts5(tokenize = 'trigram')`) answers substrings of 3 characters or more; a shorter
  one is looked up as its words, and one with no letter or digit in it (`***`) is not
  looked up.

Each word and each literal counts once, however often it is typed (a query of one word
10,000 times took 48 s). No input is FTS5 syntax: every term is quoted here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from avatar.core.errors import UsageError
from avatar.library.search.hits import fold, query_words

_PLAIN = re.compile(r"[^\W_]+")  # a word of the index: letters and digits only
# Sentence punctuation after a token is not part of it ("the parser:", "done.").
_TRAILING = ".,;:!?"
#: The shortest text the trigram index can find.
MIN_LITERAL = 3


@dataclass(frozen=True)
class Query:
    """A parsed query: `words` (folded as the index folds them) and `literals` (as typed),
    each once, in the order typed."""

    words: tuple[str, ...]
    literals: tuple[str, ...]

    def word_match(self) -> str | None:
        """The FTS5 query of the word index (every word, as a word or a word's start)."""
        return " ".join(f'"{w}"*' for w in self.words) or None

    def literal_match(self) -> str | None:
        """The FTS5 query of the trigram index (every literal, as a substring)."""
        return " AND ".join('"' + lit.replace('"', '""') + '"' for lit in self.literals) or None


def parse(text: str) -> Query:
    """The words and literals of what the user typed; a `UsageError` when there is nothing
    to search for (only punctuation, say)."""
    words: dict[str, None] = {}
    literals: dict[str, str] = {}  # by folded form: `Foo_Bar` and `foo_bar` are one
    # As the index stores text: no lone surrogate (sqlite cannot take one), and no NUL
    # (it would end an FTS5 string early).
    text = text.encode("utf-8", "replace").decode("utf-8").replace("\x00", " ")
    for phrase, token in _terms(text):
        if token:
            token = token.rstrip(_TRAILING) or token
            if _PLAIN.fullmatch(token):
                words.setdefault(fold(token), None)
                continue
            phrase = token
        phrase = phrase.strip()
        if len(phrase) >= MIN_LITERAL and _PLAIN.search(phrase):
            literals.setdefault(phrase.casefold(), phrase)
        else:
            words.update(dict.fromkeys(query_words(phrase)))
    if not words and not literals:
        raise UsageError(f"nothing to search for in {text!r}")
    return Query(tuple(words), tuple(literals.values()))


def _terms(text: str) -> dict[tuple[str, str], None]:
    """(phrase, "") for each quoted phrase (an unclosed quote runs to the end) and ("", token)
    for each run of non-blanks outside quotes, each once (str methods, no regex: a query of
    10,000 words is split in a millisecond)."""
    terms: dict[tuple[str, str], None] = {}
    for n, part in enumerate(text.split('"')):
        if n % 2:
            terms[(part, "")] = None
        else:
            terms.update(dict.fromkeys(("", t) for t in part.split()))
    return terms
