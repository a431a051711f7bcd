// The live chat: the session's events from the server (server-sent events), drawn as they
// come; a prompt, a permission answer, a provider switch and a stop are posted as JSON.
// The server renders what needs rendering (a finished answer, a diff): this only places it.
"use strict";
(function () {
  const config = JSON.parse(document.getElementById("config").textContent);
  const base = "/chat/" + encodeURIComponent(config.handle);
  const log = document.getElementById("log");
  const asks = document.getElementById("asks");
  const state = document.getElementById("state");
  const tools = new Map();
  let streaming = null;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function add(node) {
    log.appendChild(node);
    node.scrollIntoView({ block: "end" });
    return node;
  }
  function post(path, body) {
    return fetch(base + path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body || {}),
    }).then((r) => r.json().then((data) => ({ ok: r.ok, data: data })));
  }
  function setState(text, busy) {
    state.textContent = text;
    state.className = busy ? "busy" : "";
  }
  function withDiff(node, html) {
    if (!html) return;
    const old = node.querySelector(".diffs");
    if (old) old.remove();
    const box = el("div", "diffs");
    box.innerHTML = html; // made and escaped by the server
    node.appendChild(box);
  }

  const on = {
    session(e) {
      heading(e);
      add(el("div", "line", "session " + e.session_id + " (" + e.provider + ", " + e.how + ")"));
    },
    switched(e) {
      // (its session's line came before it, the handoff's one-line notice too)
      heading(e);
      const box = add(el("details", "handoff"));
      box.open = true;
      box.append(el("summary", "", "handed over to " + e.provider + ": the next prompt " +
                    "opens with"), el("pre", "", e.handoff || "(nothing to hand over)"));
    },
    user_message(e) { add(el("div", "user", e.text)); },
    turn_started(e) {
      add(el("div", "user", e.prompt));
      setState("in a turn", true);
    },
    text(e) {
      if (!streaming) streaming = add(el("div", "answer streaming", ""));
      streaming.textContent += e.text;
      streaming.scrollIntoView({ block: "end" });
    },
    rendered(e) {
      const node = streaming || add(el("div", "answer"));
      node.className = "answer";
      node.innerHTML = e.html; // the HTML export's rendering, escaped by the server
      streaming = null;
    },
    thinking(e) { add(el("div", "thinking", e.text)); },
    tool_call_started(e) {
      const node = add(el("div", "tool"));
      node.append(el("span", "name", "→ " + (e.title || e.name) + " "), el("span", "status", ""));
      withDiff(node, e.diff_html);
      tools.set(e.id, node);
    },
    tool_call_updated(e) {
      const node = tools.get(e.id);
      if (!node) return;
      if (e.status) node.querySelector(".status").textContent = e.status;
      withDiff(node, e.diff_html);
    },
    tool_call_finished(e) {
      const node = tools.get(e.id);
      if (!node) return;
      node.querySelector(".status").textContent = e.is_error ? "failed" : "done";
      if (e.is_error) node.classList.add("failed");
      withDiff(node, e.diff_html);
      if (e.output) {
        const out = el("details", "output");
        out.append(el("summary", "", "output"), el("pre", "", e.output));
        node.appendChild(out);
      }
    },
    permission_asked(e) { ask(e); setState("waiting on a permission", true); },
    permission_answered(e) {
      const node = document.getElementById("ask-" + e.id);
      if (node) node.remove();
      add(el("div", "line", "permission: " + e.answer + (e.client ? " (" + e.client + ")" : "")));
      setState("in a turn", true);
    },
    notice(e) { add(el("div", "line notice", e.message)); },
    error(e) { add(el("div", "line err", e.message)); },
    turn_ended(e) {
      if (e.error) add(el("div", "line err", e.error));
      setState("idle", false);
    },
    closed() {
      add(el("div", "line", "the session was closed"));
      setState("closed", false);
      source.close();
    },
  };

  function heading(e) {
    document.getElementById("provider").textContent = e.provider;
    document.getElementById("session").textContent = e.session_id;
    document.getElementById("switch").value = e.provider;
  }

  function ask(e) {
    if (document.getElementById("ask-" + e.id)) return;
    const box = el("div", "ask");
    box.id = "ask-" + e.id;
    box.appendChild(el("div", "title", "permission: " + e.title));
    const answer = (what, reason) =>
      post("/answer", { id: e.id, answer: what, reason: reason || "" });
    for (const [what, label] of [["allow", "Allow once"], ["always", "Allow always"],
                                 ["deny", "Deny"]]) {
      const button = el("button", what, label);
      button.type = "button";
      button.onclick = () => answer(what);
      box.appendChild(button);
    }
    const tell = el("form", "tell");
    const words = el("input");
    words.name = "reason";
    words.placeholder = "No, and tell it…";
    const send = el("button", "tell", "No, and tell it");
    tell.append(words, send);
    tell.onsubmit = (ev) => { ev.preventDefault(); answer("tell", words.value); };
    box.appendChild(tell);
    asks.appendChild(box);
    box.scrollIntoView({ block: "end" });
  }

  const source = new EventSource(base + "/events");
  source.onmessage = (msg) => {
    const e = JSON.parse(msg.data);
    const draw = on[e.type];
    if (draw) draw(e);
  };

  document.getElementById("prompt").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = ev.target.elements.text;
    if (!text.value.trim()) return;
    post("/prompt", { text: text.value });
    text.value = "";
  });
  document.getElementById("prompt").elements.text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      ev.target.form.requestSubmit();
    }
  });
  document.getElementById("cancel").onclick = () => post("/cancel");
  document.getElementById("close").onclick = () => post("/close");
  document.getElementById("switch").addEventListener("change", (ev) => {
    const provider = ev.target.value;
    add(el("div", "line", "switching to " + provider + "…"));
    post("/switch", { provider: provider }).then((r) => {
      // (done: the `switched` event shows it, on every page)
      if (r.ok) return;
      add(el("div", "line err", r.data.error));
      ev.target.value = document.getElementById("provider").textContent; // still there
    });
  });
})();
