"""The headers every answer of the web server carries, whatever answers it (a page, the API,
the event stream, a static file, an error, the token gate's 401 and redirect).

Framing is forbidden (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for browsers that
predate it): a page on another port of 127.0.0.1 is the same *site* as this one, so the
SameSite=Strict cookie goes with its requests, and an invisible frame of the chat page under
a decoy button would let one click open a session or press "Allow always".

The rest of the policy is a second line behind the escaping of what models write
(`avatar.library.export.markdown`): scripts, styles, images and connections only from this
server (images also as `data:`/`blob:` URLs, the page's own attachments), no plugins, no
`<base>`, forms posted only here. Markup slipped into an answer could then neither run nor
fetch from elsewhere (an image whose address carries what the model read).
"""

from __future__ import annotations

from avatar.server.web.auth import ASGIApp, Message, Receive, Scope, Send

#: The Content-Security-Policy of every answer.
POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HEADERS = (
    (b"content-security-policy", POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
)
_NAMES = {name for name, _ in HEADERS}


class Guarded:
    """ASGI middleware: `HEADERS` on every HTTP answer of `app` (any already set by `app`
    are replaced)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _NAMES]
                message = {**message, "headers": [*kept, *HEADERS]}
            await send(message)

        await self.app(scope, receive, guarded)
