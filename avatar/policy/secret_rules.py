"""The secret shapes and how each is masked (`avatar.policy.secrets` is the detector that
uses them, with the environment's key values). Each value is replaced by `MASK` while the name
around it stays:

- key and token shapes: OpenAI/Anthropic/OpenRouter/DeepSeek `sk-…`, Google `AIza…` and
  `GOCSPX-…`, Groq `gsk_…`, xAI `xai-…`, Hugging Face `hf_…`, AWS access key ids
  (`AKIA…`, `ASIA…`), GitHub (`ghp_`, `gho_`, `ghs_`, `ghu_`, `ghr_`, `github_pat_`), GitLab
  `glpat-`, Slack (`xox[abposr]-`, `xapp-`, hooks.slack.com webhook paths), Stripe
  (`sk_live_`, `rk_live_`, `sk_test_`, `whsec_`), npm `npm_`, PyPI `pypi-`, JSON web tokens,
  and what is left of one cut short (`sk-proj-abc…`);
- assignments to a secret-sounding name (`password`, `passwd`, `secret`, `token`, `api_key`,
  `access_key`, `private_key`, `credentials`, … also as the end of a longer name such as
  `DB_PASSWORD` or `aws_secret_access_key`) with `=`, `:`, `:=` or `=>`, quoted or not
  (`.env`, YAML, JSON `"password": "…"`, code), `--password VALUE`, `Authorization:` headers
  (`Bearer`, `Basic`, `token`) and a bare `Bearer <token>`;
- passwords in URLs (`postgres://user:PASSWORD@host`, `https://x:TOKEN@github.com`);
- PEM private-key blocks, with or without their END line (a cut-off key is masked to its last
  base64 run); the BEGIN and END lines stay.

Ordinary text stays as it was: git hashes, UUIDs, base64 data (images in session files), words
that merely continue into a shape (`desk-…`), and assignments whose value is code
(`token = next(it)`, `password = self.password`, `api_key: str | None`), a placeholder
(`$TOKEN`, `${…}`, `<…>`) or short (unquoted values need `MIN_SECRET_LENGTH` characters,
quoted ones `MIN_QUOTED`). A value shaped like a name (`token = auth_token`) is code unless
its letters are a key's — digits amid them (`token = abcdef1234567890`), capitals as no name
has them — or its name holds nothing but keys (`aws_secret_access_key = …`, the AWS
credentials file's form, and any `*_secret_access_key`).

Linear time: every pattern starts with a fixed prefix (or a look-behind and runs only where an
ellipsis occurs) and, once that matches, either fails within a bounded number of characters or
succeeds and consumes what it scanned (possessive quantifiers, optional tails, the final
decision in Python), so no input makes a pattern scan the same text twice. A repeated group is
atomic (`(?>(?:…)+)`), never a possessive group (`(?:…)++`): CPython before 3.11.5 matched the
latter wrongly when the group could backtrack (gh-106052: a password in a URL cut with `...`
stayed), and the package accepts 3.11.0; CI runs the secret tests on Debian's 3.11.2. The case-blind
rules run on a lowercased copy (a case-blind regex costs ~15x more); a short text with none of
the rules' fixed starts is left after one search. The old PEM pattern (`BEGIN.*?END` under
re.S) took 11.7 s on 232 KB here; tests/policy/test_secrets.py bounds 2 MB of such input.
Importing this module compiles nothing: the patterns are compiled when first used.
"""

from __future__ import annotations

import re
from functools import cache

# Not `typing` at run time: this module loads with every listing that derives a title.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    #: What a rule does with one match: the replacement text, or None to keep it as it is.
    #: It reads the original text (`text`) at the match's positions (the match may be of
    #: the lowercased copy).
    Replace: TypeAlias = Callable[[re.Match[str], str], str | None]

MASK = "[redacted]"
#: Unquoted assigned values shorter than this are left: short values ("test", "x", "true")
#: would mask ordinary words, and real keys are long. (The environment's values too.)
MIN_SECRET_LENGTH = 8
#: A quoted value (`password = "hunter2"`) is meant as one: shorter ones count too.
MIN_QUOTED = 4

#: Names ending so hold secrets (`key` only after one of `_KEY_KINDS`: `api_key`).
_SECRET_KEY_ENDS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "credentials",
)
# Before `key`, the words that make it a secret (`api_key`, `accesskey`, `private-key`).
_KEY_KINDS = ("api", "access", "secret", "private", "auth", "signing", "encryption", "master")
#: Values that stand for a secret rather than being one.
_PLACEHOLDER = ("$", "%", "{", "<", "*", "…", "...", MASK)
# A shape preceded by one of these continues a longer word, or base64 data (an image in a
# session file must not lose four bytes to a chance `AIza…`).
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/")
#: How text cut short ends: a title, a preview (`sk-proj-abc…`).
_ELLIPSES = ("…", "...")


def mask_shapes(text: str) -> str:
    """`text` with every secret shape masked (the environment's values aside)."""
    low = text.lower()
    if len(text) < _SHORT and not _compiled(_TRIGGER, 0).search(low):
        return text  # (the strings of a session file are mostly short: ids, times, kinds)
    for rule in _rules():
        masked = rule.apply(text, low)
        if masked is not text:
            text, low = masked, masked.lower()
    return text


def is_secret_key(name: str) -> bool:
    """True for a key or variable name whose value is a secret as the assignment rule sees
    it (`password`, `DB_PASSWORD`, `client_secret`, `api_key`, `auth_token`)."""
    low = name.lower()
    if low.endswith(_SECRET_KEY_ENDS):
        return True
    kind = low.removesuffix("key").rstrip("_-")
    return kind != low and kind.endswith(_KEY_KINDS)


def is_secret_value(value: str) -> bool:
    """True for a string that can be a secret value (not too short, not a placeholder)."""
    return len(value) >= MIN_QUOTED and not value.startswith(_PLACEHOLDER)


# -- the rules ------------------------------------------------------------------------------


class _Rule:
    """One pattern, starting with a fixed prefix (so the regex engine skips to it) or run
    only where one of its `needles` occurs; when `folded`, written in lower case and matched
    against the lowercased text."""

    __slots__ = ("folded", "needles", "replace", "source")

    def __init__(
        self, source: str, replace: Replace, folded: bool = False, needles: tuple[str, ...] = ()
    ) -> None:
        self.source, self.replace, self.folded = source, replace, folded
        self.needles = needles  # when given, the rule runs only where one occurs

    def apply(self, text: str, low: str) -> str:
        """`text` with what the rule finds replaced."""
        if self.needles and not any(n in text for n in self.needles):
            return text
        if not self.folded:
            found = _compiled(self.source, 0).finditer(text)
        elif len(low) == len(text):
            found = _compiled(self.source, 0).finditer(low)
        else:  # lowercasing changed the length (a rare `İ`): positions would not line up
            found = _compiled(self.source, re.IGNORECASE).finditer(text)
        out: list[str] = []
        pos = 0
        for m in found:
            new = self.replace(m, text)
            if new is not None:
                out += (text[pos : m.start()], new)
                pos = m.end()
        if not out:
            return text
        out.append(text[pos:])
        return "".join(out)


@cache
def _compiled(source: str, flags: int) -> re.Pattern[str]:
    return re.compile(source, flags)


def _bounded(m: re.Match[str], text: str) -> bool:
    """True when the match does not continue a longer word (`desk-…` is no `sk-` key)."""
    start = m.start()
    return start == 0 or text[start - 1] not in _WORD


def _whole(m: re.Match[str], text: str) -> str | None:
    return MASK if _bounded(m, text) else None


def _jwt(m: re.Match[str], text: str) -> str | None:
    parts = m.group().split(".")
    if len(parts) == 3 and parts[1].startswith("eyJ") and min(map(len, parts)) >= 8:
        return _whole(m, text)
    return None


def _pem(m: re.Match[str], text: str) -> str | None:
    body, end = m.group("body"), m.group("end") or ""
    if not end:  # cut off: the key ends with its last base64 run, what follows is kept
        cut = 0
        for run in _compiled(r"[A-Za-z0-9+/=]{16,}+", 0).finditer(body):
            cut = run.end()
        if not cut:
            return None  # a BEGIN line alone (or one masked already)
        body, end = body[:cut], body[cut:]
    # The line breaks around the body stay (also as the `\n` escapes of JSON text).
    lead = _compiled(r"(?>(?:\s|\\[nr])*)", 0).match(body)
    tail = _compiled(r"(?>(?:\s|[nr]\\)*)", 0).match(body[::-1])
    assert lead is not None and tail is not None  # (a `*` always matches)
    cut = len(body) - tail.end()
    if cut <= lead.end():
        return None
    return m.group("begin") + body[: lead.end()] + MASK + body[cut:] + end


def _head(m: re.Match[str], text: str) -> str | None:
    """The match's `head` group kept (from the original text), the rest masked."""
    tail = m.end() - len(m.group("tail"))
    if text[m.end("head") : tail] == MASK:
        return None
    return text[m.start() : m.end("head")] + MASK + text[tail : m.end()]


def _header(m: re.Match[str], text: str) -> str | None:
    """`Authorization: …`: a credential is long, an example (`Bearer …`) is not one."""
    value = text[m.end("head") : m.end()]
    if len(value) < MIN_SECRET_LENGTH or value.startswith(_PLACEHOLDER):
        return None
    return _head(m, text)


def _bearer(m: re.Match[str], text: str) -> str | None:
    if m.end() - m.end("head") < 16 or not _bounded(m, text):
        return None
    return _head(m, text)


# An unquoted value is code, not a secret, when it names an attribute (`self.token`), calls
# or indexes something, or is a bare name where code is likely: after ` = ` or a quoted key
# (`"password": password`, which JSON would quote), or one naming the key (`token=auth_token`).
_DOTTED = r"[a-z_]\w*+(?>(?:\.[a-z_]\w*+)+)"
_IDENTIFIER = r"[a-z_][a-z_0-9]*+"


def _assigned(m: re.Match[str], text: str) -> str | None:
    """An assignment: the value masked unless it is code, a placeholder or too short."""
    name = m.group("name")
    before = text[max(0, m.start() - 16) : m.start()].lower().rstrip("_-")
    if name == "key" and not before.endswith(_KEY_KINDS):
        return None
    quoted = m.group("quote") is not None
    which = "qv" if quoted else "uv"
    start, end = m.start(which), m.end(which)
    value = text[start:end]
    if value.startswith(_PLACEHOLDER):
        return None
    if value.endswith(_ELLIPSES):  # cut short: whatever is left of it is a piece of a secret
        pass
    elif quoted:  # (not closed on its line: a closing quote taken for an opening one)
        if len(value) < MIN_QUOTED or text[end : end + 1] != m.group("quote"):
            return None
    elif len(value) < MIN_SECRET_LENGTH or _is_code(value, text[end : end + 1], m, name, before):
        return None
    return text[m.start() : start] + MASK + text[end : m.end()]


# Names whose value is a secret whatever it looks like: `aws_secret_access_key = …` (the AWS
# credentials file's form, and any `*_secret_access_key`) holds nothing but the key — unless
# the value names code (`secret_key`, `creds.secret`: not one word of letters and digits).
_ALWAYS_SECRET = ("secret_access", "secretaccess", "secret-access")


def _keyish(value: str) -> bool:
    """True for a name-like value that is a key, not code: digits amid its letters
    (`hunter2hunter2`, `AbCd1234EfGh`) or capitals as no name has them
    (`wJalrXUtnFEMIKMDENGbPxRfiCY`). A name of code spells words: `auth_token`, `authToken`,
    `token2`, `HTTPRequestHandler`, `getTokenFromEnvironment`."""
    if "_" in value and len(value) < 24:
        return False  # (snake_case: `sha256_digest`, `api_key_v2`)
    digits = sum(c.isdigit() for c in value)
    if digits >= 2 and digits < len(value) - 1:
        return True
    # A lone small letter between capitals (`PxR`): names put words after their capitals.
    lone = sum(
        a.isupper() and b.islower() and c.isupper()
        for a, b, c in zip(value, value[1:], value[2:], strict=False)
    )
    return len(value) >= 16 and lone >= 2


def _is_code(value: str, after: str, m: re.Match[str], name: str, before: str) -> bool:
    """True when an unquoted assigned `value` (followed by `after`, the name preceded by
    `before`) is code, not a secret."""
    if after in ("(", "[", "{", "<") or _compiled(_DOTTED, re.IGNORECASE).fullmatch(value):
        return True
    if m.group().startswith("--") or not _compiled(_IDENTIFIER, re.IGNORECASE).fullmatch(value):
        return False  # (a flag's value is no code)
    if _keyish(value) or (name == "key" and before.endswith(_ALWAYS_SECRET) and value.isalnum()):
        return False  # a name's shape, but a key's letters (or a name that holds only keys)
    sep = m.group("sep")
    spaced = sep.lstrip("\"'")[:1] in (" ", "\t")  # `x = y`, not `X=y` (.env) or `x: y`
    low = value.lower()
    named = low == name or low.endswith("_" + name)  # `password=password`, `token=auth_token`
    return spaced or named or sep[:1] in ('"', "'") or ":=" in sep or "=>" in sep


# Quoted values stop at their closing quote (or the end of the line); unquoted ones at space,
# a quote or punctuation that ends a value in code and config.
_VALUE = r"(?:(?P<quote>[\"'`])(?P<qv>[^\"'`\n\\]*+)|(?P<uv>[^\s\"'`,;()\[\]{}<>]++))"


# The fixed starts of the key shapes (in `_rules`).
_PREFIXES = (
    r"sk-",
    r"A(?:KIA|SIA|BIA|CCA)",
    r"gh[pousr]_",
    r"github_pat_",
    r"glpat-",
    r"xox[abposr]-",
    r"xapp-",
    r"[sr]k_(?:live|test)_",
    r"whsec_",
    r"AIza",
    r"GOCSPX-",
    r"gsk_",
    r"xai-",
    r"hf_",
    r"npm_",
    r"pypi-",
    r"eyJ",
)
# What every rule's match holds, in lower case: a short text without any is left as it is
# after one search instead of one per rule.
_TRIGGER = (
    r"-----begin |://|hooks\.slack\.com/|sk-|a[ksb]ia|acca|gh[pousr]_|github_pat_|glpat-|xox"
    r"|xapp-|[sr]k_|whsec_|aiza|gocspx-|gsk_|xai-|hf_|npm_|pypi-|eyj|authorization|bearer"
    r"|pass|secret|token|key|credential"
)
_SHORT = 1024


@cache
def _rules() -> tuple[_Rule, ...]:
    """The rules, in the order they apply."""
    pem = r"-----{} (?:[A-Z0-9]+ ){{0,3}}PRIVATE KEY(?: BLOCK)?-----"
    shapes = (
        r"sk-[A-Za-z0-9_-]{20,}+",  # OpenAI, Anthropic, OpenRouter, DeepSeek
        r"A(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}+(?![A-Z0-9])",  # AWS access key ids
        r"gh[pousr]_[A-Za-z0-9]{20,}+",  # GitHub
        r"github_pat_[A-Za-z0-9_]{20,}+",
        r"glpat-[A-Za-z0-9_-]{20,}+",  # GitLab
        r"x(?:ox[abposr]|app)-[A-Za-z0-9-]{10,}+",  # Slack
        r"sk_(?:live|test)_[A-Za-z0-9]{10,}+",  # Stripe
        r"rk_(?:live|test)_[A-Za-z0-9]{10,}+",
        r"whsec_[A-Za-z0-9]{20,}+",
        r"AIza[A-Za-z0-9_-]{30,}+",  # Google
        r"GOCSPX-[A-Za-z0-9_-]{20,}+",
        r"gsk_[A-Za-z0-9]{20,}+",  # Groq
        r"xai-[A-Za-z0-9]{20,}+",
        r"hf_[A-Za-z0-9]{30,}+",  # Hugging Face
        r"npm_[A-Za-z0-9]{30,}+",
        r"pypi-[A-Za-z0-9_-]{50,}+",
    )
    names = (r"pass(?:word|wd|phrase)", "secret", "token", "key", "credentials?")
    assign = r"(?P<sep>[\"']?[ \t]*+(?::=|=>|[:=])[ \t]*+)"
    return (
        _Rule(
            rf"(?P<begin>{pem.format('BEGIN')})"
            # base64, header lines (`Proc-Type: 4,ENCRYPTED`), the `\n` escapes of JSON text;
            # never five dashes in a row, so it stops at the END line
            r"(?P<body>(?>(?:[A-Za-z0-9+/=\s\\:,.]|-(?!----))*))"
            rf"(?P<end>{pem.format('END')})?",
            _pem,
        ),
        _Rule(
            r"(?P<head>://[^\s/:@\"'<>]*+:)(?>(?:[^\s/@\"'<>….]|\.(?!\.\.))+)(?P<tail>@|…|\.\.\.)",
            _head,
        ),
        _Rule(
            r"(?P<head>hooks\.slack\.com/(?:services|workflows|triggers)/)[\w/-]++(?P<tail>)", _head
        ),
        *(_Rule(shape, _whole) for shape in shapes),
        # a shape cut short (`sk-proj-abc…` in a title or a preview): what is left of it
        _Rule(
            # (the look-behind stops a run of prefixes (`sk-sk-sk-…`) being scanned from each)
            rf"(?<![\w+/-])(?:{'|'.join(_PREFIXES)})[\w-]{{8,}}+ ?(?:…|\.\.\.)",
            _whole,
            needles=_ELLIPSES,
        ),
        _Rule(r"eyJ[A-Za-z0-9_-]{8,}+(?:\.[A-Za-z0-9_-]*+){0,2}", _jwt),
        _Rule(
            r"(?P<head>authorization[\"']?\s*+[:=]\s*+[\"']?(?:(?:bearer|basic|token|bot)\s++)?)"
            r"[^\s\"'`,;]++(?P<tail>)",
            _header,
            folded=True,
        ),
        _Rule(r"(?P<head>bearer\s++)[a-z0-9._~+/-]++=*+(?P<tail>)", _bearer, folded=True),
        *(_Rule(rf"(?P<name>{name}){assign}{_VALUE}", _assigned, folded=True) for name in names),
        _Rule(
            rf"--(?P<name>{'|'.join(names)}|api-key)(?P<sep>=|[ \t]++){_VALUE}",
            _assigned,
            folded=True,
        ),
    )
