"""The web server's door (docs/design.md §11, issue 24 acceptance 3): the real server, started as
`avatar serve --web` starts it, asked over HTTP. Without the token, or with a wrong one,
every page, the event stream and the API answer 401; the printed URL's token becomes a
cookie and leaves the address; no answer carries an `Access-Control-*` header (no CORS);
another `Host` or another site's `Origin` is refused; every answer, whatever answers it,
forbids framing (clickjacking, issue 32); and the server listens on 127.0.0.1 only (its
sockets, read from /proc/net/tcp and tcp6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.homes import AgentHome, avatar_env
from tests.support.served import socket_inodes
from tests.support.web import Served, web_server

PATHS = [
    ("GET", "/"),
    ("GET", "/library"),
    ("GET", "/library?q=anything"),
    ("GET", "/live"),
    ("GET", "/chat/01ABC"),
    ("GET", "/chat/01ABC/events"),
    ("GET", "/static/chat.js"),
    ("GET", "/static/export.css"),
    ("POST", "/live/open"),
    ("POST", "/chat/01ABC/prompt"),
    ("POST", "/chat/01ABC/answer"),
]


@pytest.fixture
def server(agent_home: AgentHome) -> Iterator[Served]:
    """A running web server."""
    with web_server(avatar_env(agent_home), agent_home.workdir) as served:
        yield served


def no_cors(response: httpx.Response) -> None:
    assert not [h for h in response.headers if h.lower().startswith("access-control-")]


def unframable(response: httpx.Response) -> None:
    where = (response.request.method, response.request.url.path, response.status_code)
    policy = response.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in policy, where
    assert response.headers.get("x-frame-options") == "DENY", where
    # (and the rest of the policy: only this server's scripts, styles and connections)
    assert "default-src 'self'" in policy and "img-src 'self' data: blob:" in policy, where


@pytest.mark.parametrize(("method", "path"), PATHS)
def test_without_the_token_or_with_a_wrong_one_every_request_gets_401(
    server: Served, method: str, path: str
) -> None:
    base, token = server.base, server.token
    wrong = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    for cookies, params in (({}, {}), ({"avatar_token": wrong}, {}), ({}, {"token": wrong})):
        with httpx.Client(base_url=base, cookies=cookies) as client:
            response = client.request(method, path, params=params)
            assert response.status_code == 401, (path, cookies, params)
            assert "token" not in response.text.replace("a token is needed", "")
            no_cors(response)


def test_the_printed_url_sets_a_strict_cookie_and_then_pages_load(
    server: Served,
) -> None:
    base, token, url = server.base, server.token, server.url
    with httpx.Client(base_url=base) as client:
        first = client.get(url)
        assert first.status_code == 303
        assert first.headers["location"] == "/"  # the token leaves the address bar
        cookie = first.headers["set-cookie"]
        assert cookie.startswith(f"avatar_token={token};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        page = client.get("/library", follow_redirects=True)
        assert page.status_code == 200 and "<h1>Sessions</h1>" in page.text
        assert token not in page.text
        events = client.get("/chat/01ABC/events")  # no such live session: but past the door
        assert events.status_code == 404
        for response in (first, page, events):
            no_cors(response)
        # A preflight from another site gets no CORS answer either.
        preflight = client.options(
            "/chat/01ABC/prompt",
            headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
        )
        no_cors(preflight)
        assert preflight.status_code in (401, 405)


def test_another_host_or_origin_is_refused_even_with_the_token(
    server: Served,
) -> None:
    base, token = server.base, server.token
    with httpx.Client(base_url=base, cookies={"avatar_token": token}) as client:
        assert client.get("/library").status_code == 200
        rebound = client.get("/library", headers={"host": "evil.example"})
        assert rebound.status_code == 401
        posted = client.post(
            "/chat/01ABC/prompt", json={"text": "hi"}, headers={"origin": "http://evil.example"}
        )
        assert posted.status_code == 401
        same = client.post("/chat/01ABC/prompt", json={"text": "hi"}, headers={"origin": base})
        assert same.status_code == 404  # past the door: no such live session


def _listening(pid: int) -> list[tuple[str, str, int]]:
    """(table, local address in hex, port) of every listening TCP socket of process `pid`."""
    mine = socket_inodes(pid)
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in mine:  # 0A: LISTEN
                address, port = fields[1].split(":")
                found.append((table, address, int(port, 16)))
    return found


def test_nothing_listens_off_loopback(server: Served) -> None:
    port = int(server.base.rsplit(":", 1)[1])
    listening = _listening(server.pid)
    assert ("tcp", "0100007F", port) in listening  # 127.0.0.1, as /proc writes it
    assert all(table == "tcp" and address == "0100007F" for table, address, _ in listening)


def test_every_answer_forbids_framing(server: Served) -> None:
    base, token, url = server.base, server.token, server.url
    with httpx.Client(base_url=base) as client:  # the door's answers: 401s, the redirect
        for method, path in PATHS:
            refused = client.request(method, path)
            assert refused.status_code == 401
            unframable(refused)
        unframable(client.get("/library", headers={"host": "evil.example"}))
        first = client.get(url)
        assert first.status_code == 303
        unframable(first)
    with httpx.Client(base_url=base, cookies={"avatar_token": token}) as client:
        answers = [
            client.get("/"),  # a redirect
            client.get("/library"),
            client.get("/library?q=anything"),
            client.get("/library/nosuchsession"),  # an error page
            client.get("/library/nosuchsession/export?format=doc"),
            client.get("/live"),
            client.get("/chat/01ABC"),
            client.get("/chat/01ABC/events"),
            client.post("/chat/01ABC/prompt", json={"text": "hi"}),
            client.get("/static/chat.js"),
            client.get("/static/web.css"),
            client.get("/static/export.css"),
            client.get("/static/nothing.js"),
            client.get("/nowhere"),  # the framework's own 404
            client.get("/live/open"),  # and its 405
        ]
        assert [a.status_code for a in answers] == [
            *(303, 200, 200, 404, 400, 200, 404, 404, 404),
            *(200, 200, 200, 404, 404, 405),
        ]
        opened = client.post("/live/open", data={"provider": "native"})
        assert opened.status_code == 303
        chat = client.get(opened.headers["location"])
        assert chat.status_code == 200 and 'id="prompt"' in chat.text
        answers += [opened, chat, client.post(opened.headers["location"] + "/prompt", json={})]
        with client.stream("GET", opened.headers["location"] + "/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            answers.append(stream)
        for answer in answers:
            unframable(answer)


def test_a_prompts_images_are_checked_before_anything_is_sent(server: Served) -> None:
    import base64

    from avatar.core.prompts import MAX_IMAGE_BYTES

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    with httpx.Client(base_url=server.base, cookies={"avatar_token": server.token}) as client:
        chat = client.post("/live/open", data={"provider": "native"}).headers["location"]
        png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
        refused = {
            "not base64": [{"name": "a.png", "data": "%%%"}],
            "not an image avatar can attach": [{"name": "a.txt", "data": b64(b"hello")}],
            "image too large": [{"name": "big.png", "data": b64(png + b"\0" * MAX_IMAGE_BYTES)}],
            "at most 8 images": [{"name": "a.png", "data": b64(png)}] * 9,
            "an image is {name, data}": ["a.png"],
        }
        for said, images in refused.items():
            answer = client.post(chat + "/prompt", json={"text": "look", "images": images})
            assert answer.status_code == 400 and said in answer.json()["error"], answer.text
        assert client.post(chat + "/prompt", json={"text": " ", "images": []}).status_code == 400
