"""The token every request must carry (docs/design.md §11): the page is on 127.0.0.1, but any local
process, and any web page the user opens, can reach 127.0.0.1.

The printed URL holds the token once (`/?token=…`). The first request answers with a redirect
to the same page without it and sets the token as a cookie: `HttpOnly` (no script reads it),
`SameSite=Strict` (a request another site makes does not carry it, so another site cannot
post a prompt), `Path=/`. Links and the event stream then need no token in them, and it stays
out of the browser's history and of `Referer` headers. A request without the token, or with a
wrong one, gets 401; so does one whose `Host` is not this server's own address (a DNS
rebinding page), and a POST whose `Origin` is another site. No CORS header is ever sent.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The cookie holding the token after the first request.
COOKIE = "avatar_token"
#: The query parameter of the printed URL.
PARAM = "token"


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class TokenGate:
    """ASGI middleware: lets through only requests carrying `token` (see the module
    docstring); `hosts` are the `Host` values this server answers to."""

    def __init__(self, app: ASGIApp, token: str, hosts: set[str]) -> None:
        self.app, self.token, self.hosts = app, token, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = dict(query).get(PARAM)
        if headers.get("host") not in self.hosts or not self._origin_ok(scope, headers):
            await _refuse(send, "not this server's address")
        elif given is not None and self._ok(given) and scope["method"] == "GET":
            rest = urlencode([(k, v) for k, v in query if k != PARAM])
            path = scope.get("raw_path") or scope["path"].encode()
            await _redirect(send, path + (f"?{rest}".encode() if rest else b""), self.token)
        elif self._ok(given) or self._ok(_cookie(headers.get("cookie", ""))):
            await self.app(scope, receive, send)
        else:
            await _refuse(send, "a token is needed: open the URL `avatar serve --web` printed")

    def _ok(self, given: str | None) -> bool:
        return given is not None and secrets.compare_digest(given, self.token)

    def _origin_ok(self, scope: Scope, headers: dict[str, str]) -> bool:
        origin = headers.get("origin")
        if scope["method"] in ("GET", "HEAD") or origin is None:
            return True
        return origin.partition("://")[2] in self.hosts


def _cookie(header: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header is no token
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


async def _refuse(send: Send, why: str) -> None:
    body = f"401 unauthorized: {why}\n".encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: bytes, token: str) -> None:
    cookie = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location),
                (b"set-cookie", cookie.encode("latin-1")),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
