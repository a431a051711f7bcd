"""The web page notifies when nobody looks (issue 32), in a real headless Chromium at a
desktop's and a phone's width, the native agent behind the server against the fake model
server: the user sends a prompt and goes to another tab; when the turn ends, the chat's tab
title carries a count ("(1) Chat · avatar") and, notifications allowed, a notification says
so; when the user comes back both go. The same for a permission question waiting. While the
user looks, a turn that ends changes nothing.

Chromium runs headless, where every tab counts as focused: the test lets the chat's tab lose
focus for real (Chromium's focus emulation off, another tab brought to the front), and
records the notifications the page makes (the page's `Notification`, wrapped before its
script runs)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.support.homes import AgentHome, avatar_env
from tests.support.model_server import FakeModelServer, Reply
from tests.support.web import WAIT, WIDTHS, chromium, open_chat, send
from tests.support.web import web_server as serving

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

#: Records each notification the page makes, and whether it was closed.
RECORDER = """
(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notes = [];
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      this.__note = { title: title, body: (options || {}).body || "", closed: false };
      window.__notes.push(this.__note);
    }
    close() { this.__note.closed = true; super.close(); }
  }
  Object.defineProperty(Recorded, "permission", { get: () => Real.permission });
  Recorded.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Recorded;
})();
"""


def notes(page: Any) -> list[dict[str, Any]]:
    return list(page.evaluate("window.__notes"))


@pytest.mark.parametrize("width", WIDTHS)
def test_a_turn_ended_or_a_question_waiting_unseen_is_notified(
    agent_home: AgentHome, model_server: FakeModelServer, width: int
) -> None:
    first, second = threading.Event(), threading.Event()
    model_server.chat.append(
        Reply.text("Seen as it ended."),
        Reply.text("The migration is done.", chunks=["The migration ", "is done."]).held(first),
        Reply.text("Writing it.", chunks=["Writing ", "it."]).held(second)
        + Reply.tool_call("write", {"path": "notes.md", "content": "x\n"}),
        Reply.text("Wrote it."),
    )
    with serving(avatar_env(agent_home), agent_home.workdir) as served, chromium() as browser:
        context = browser.new_context(viewport={"width": width, "height": 800})
        context.grant_permissions(["notifications"], origin=served.base)
        context.add_init_script(RECORDER)
        page = context.new_page()
        open_chat(page, served.url, "native")
        page.wait_for_load_state("networkidle")
        title = page.title()
        assert title == "Chat · avatar"
        context.new_cdp_session(page).send("Emulation.setFocusEmulationEnabled", {"enabled": False})
        elsewhere = context.new_page()
        page.bring_to_front()
        assert page.evaluate("document.hasFocus()")

        # Looked at: a turn that ends changes nothing.
        send(page, "a quick one")
        page.wait_for_selector("#log .answer:has-text('Seen as it ended.')", timeout=WAIT)
        page.wait_for_selector("#state:text('idle')", timeout=WAIT)
        assert page.title() == title and notes(page) == []

        # Sent, then the user went to another tab: the end is told.
        send(page, "migrate it")
        page.wait_for_selector("#log .answer:has-text('The migration')", timeout=WAIT)
        elsewhere.bring_to_front()
        assert not page.evaluate("document.hasFocus()")
        first.set()
        expect(page).to_have_title(f"(1) {title}", timeout=WAIT)
        [note] = notes(page)
        assert note["title"] == "avatar: the turn ended"
        assert "The migration is done." in note["body"] and not note["closed"]
        page.bring_to_front()  # the user looks: the count and the notification go
        expect(page).to_have_title(title, timeout=WAIT)
        assert notes(page)[0]["closed"]

        # A permission question waiting while the user is away.
        send(page, "write notes")
        page.wait_for_selector("#log .answer:has-text('Writing')", timeout=WAIT)
        elsewhere.bring_to_front()
        second.set()
        expect(page).to_have_title(f"(1) {title}", timeout=WAIT)
        asked = notes(page)[1]
        assert asked["title"] == "avatar: a permission waits" and "notes.md" in asked["body"]
        page.bring_to_front()
        expect(page).to_have_title(title, timeout=WAIT)
        page.click(".ask button.allow")
        page.wait_for_selector("#log .answer:has-text('Wrote it.')", timeout=WAIT)
        page.wait_for_selector("#state:text('idle')", timeout=WAIT)
        assert page.title() == title and len(notes(page)) == 2


@pytest.mark.parametrize("width", WIDTHS)
def test_without_notifications_allowed_the_title_still_counts(
    agent_home: AgentHome, model_server: FakeModelServer, width: int
) -> None:
    held = threading.Event()
    model_server.chat.append(Reply.text("One.", chunks=["O", "ne."]).held(held))
    with serving(avatar_env(agent_home), agent_home.workdir) as served, chromium() as browser:
        context = browser.new_context(viewport={"width": width, "height": 800})
        page = context.new_page()
        open_chat(page, served.url, "native")
        assert page.locator("#notify").is_visible()  # offered, not asked unprompted
        context.new_cdp_session(page).send("Emulation.setFocusEmulationEnabled", {"enabled": False})
        elsewhere = context.new_page()
        page.bring_to_front()
        send(page, "go")
        page.wait_for_selector("#log .answer:has-text('O')", timeout=WAIT)
        elsewhere.bring_to_front()
        held.set()
        expect(page).to_have_title("(1) Chat · avatar", timeout=WAIT)
        page.bring_to_front()
        expect(page).to_have_title("Chat · avatar", timeout=WAIT)
