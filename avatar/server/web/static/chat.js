// The live chat: the session's events from the server (server-sent events), drawn as they
// come; a prompt (with images), a permission answer, a provider switch and a stop are posted
// as JSON. The server renders what needs rendering (an answer's markdown block by block, a
// diff) and escapes it: this only places it. When a turn ends or a permission waits while the
// page is not looked at, it says so in the tab's title ("(1) Chat · avatar") and, where the
// user allowed it, as a notification; both go once the user looks.
"use strict";
(function () {
  const config = JSON.parse(document.getElementById("config").textContent);
  const base = "/chat/" + encodeURIComponent(config.handle);
  const log = document.getElementById("log");
  const asks = document.getElementById("asks");
  const state = document.getElementById("state");
  const form = document.getElementById("prompt");
  const attached = document.getElementById("attached");
  const tools = new Map();
  let answer = null; // the answer streaming: {node, tail}
  let images = []; // attached to the next prompt: {name, data (base64), url}
  const sent = []; // this page's prompts {text, images}: their images show when they start

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function near() { // the reader is at the end: keep following what comes
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  }
  function follow(was) { if (was) window.scrollTo(0, document.body.scrollHeight); }
  function add(node) {
    const was = near();
    log.appendChild(node);
    follow(was);
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
    const old = node.querySelector(":scope > .diffs");
    if (old) old.remove();
    const box = el("div", "diffs");
    box.innerHTML = html; // made and escaped by the server
    node.appendChild(box);
  }

  // ----- notifications --------------------------------------------------------------------
  const title = document.title;
  const bell = document.getElementById("notify");
  let caughtUp = false; // the events so far are replayed when the page opens: not news
  let unseen = 0;
  let shown = [];
  function looking() { return document.visibilityState === "visible" && document.hasFocus(); }
  function tell(what, body) {
    if (!caughtUp || looking()) return;
    unseen += 1;
    document.title = "(" + unseen + ") " + title;
    if (window.Notification && Notification.permission === "granted") {
      const note = new Notification("avatar: " + what, { body: body || "", tag: base });
      note.onclick = () => { window.focus(); note.close(); };
      shown.push(note);
    }
  }
  function seen() {
    if (!looking()) return;
    unseen = 0;
    document.title = title;
    for (const note of shown) note.close();
    shown = [];
  }
  window.addEventListener("focus", seen);
  document.addEventListener("visibilitychange", seen);
  if (window.Notification && Notification.permission === "default") {
    bell.hidden = false;
    bell.onclick = () => Notification.requestPermission().then(() => { bell.hidden = true; });
  }

  // ----- the answer, block by block -------------------------------------------------------
  function answering() {
    if (!answer) {
      const node = add(el("div", "answer md streaming"));
      answer = { node: node, tail: node.appendChild(el("div", "tail")) };
    }
    return answer;
  }

  // ----- tool calls: one line each, its input, output and diff inside ----------------------
  function toolLine(e) {
    const node = add(el("div", "tool"));
    const box = node.appendChild(el("details"));
    const line = box.appendChild(el("summary"));
    line.append(el("span", "mark", "→"), " ", el("span", "name", e.title || e.name || "tool"),
                " ", el("span", "status", ""), el("span", "summary", ""));
    if (e.input !== undefined && e.input !== null && Object.keys(e.input).length) {
      const args = typeof e.input === "string" ? e.input : JSON.stringify(e.input, null, 2);
      box.append(el("div", "label", "input"), el("pre", "input", args));
    }
    tools.set(e.id, node);
    return node;
  }

  const on = {
    caught_up() { caughtUp = true; },
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
      const node = add(el("div", "user", e.prompt));
      const ours = sent.length && e.client === "web" && caughtUp &&
        e.prompt.startsWith(sent[0].text.trim());
      const mine = ours ? sent.shift().images : [];
      if (mine.length) {
        node.textContent = e.prompt.replace(/\n*(\[image: [^\]\n]*\]\n?)+$/, "");
        const row = node.appendChild(el("div", "images"));
        for (const image of mine) {
          const img = row.appendChild(el("img"));
          img.src = image.url;
          img.alt = image.name;
          img.title = image.name;
        }
      }
      setState("in a turn", true);
    },
    text(e) {
      const a = answering();
      a.tail.textContent += e.text;
      follow(near());
    },
    blocks(e) {
      const was = near();
      const a = answering();
      a.tail.insertAdjacentHTML("beforebegin", e.html); // rendered and escaped by the server
      a.tail.textContent = e.tail;
      if (e.end) {
        a.tail.remove();
        a.node.classList.remove("streaming");
        answer = null;
      }
      follow(was);
    },
    thinking(e) { add(el("div", "thinking", e.text)); },
    tool_call_started(e) {
      const node = toolLine(e);
      withDiff(node, e.diff_html);
    },
    tool_call_updated(e) {
      const node = tools.get(e.id);
      if (!node) return;
      if (e.title) node.querySelector(".name").textContent = e.title;
      if (e.status) node.querySelector(".status").textContent = e.status;
      withDiff(node, e.diff_html);
    },
    tool_call_finished(e) {
      const node = tools.get(e.id) || toolLine(e);
      const failed = !!e.is_error;
      node.classList.add(failed ? "failed" : "done");
      node.querySelector(".mark").textContent = failed ? "✗" : "✓";
      node.querySelector(".status").textContent = "";
      const first = (e.output || "").split("\n").map((s) => s.trim()).find((s) => s) || "";
      node.querySelector(".summary").textContent = first ? " — " + first : "";
      withDiff(node, e.diff_html);
      if (e.output) {
        const box = node.querySelector("details");
        box.append(el("div", "label", "output"), el("pre", "output", e.output));
      }
    },
    permission_asked(e) {
      ask(e);
      setState("waiting on a permission", true);
      tell("a permission waits", e.title);
    },
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
      const all = log.querySelectorAll(".answer");
      const last = all[all.length - 1];
      tell(e.error ? "the turn failed" : "the turn ended",
           e.error || (last ? last.textContent.trim().slice(0, 160) : ""));
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
  }

  const source = new EventSource(base + "/events");
  source.onmessage = (msg) => {
    const e = JSON.parse(msg.data);
    const draw = on[e.type];
    if (draw) draw(e);
  };
  source.onerror = () => { // (a dropped stream is retried; one refused is over)
    if (source.readyState !== EventSource.CLOSED || state.textContent === "closed") return;
    add(el("div", "line err", "this session is no longer live: open it again from the library"));
    setState("closed", false);
  };

  // ----- the prompt -----------------------------------------------------------------------
  function attach(files) {
    for (const file of files) {
      if (!/^image\/(png|jpeg|gif|webp)$/.test(file.type)) continue;
      const reader = new FileReader();
      reader.onload = () => {
        const data = String(reader.result).split(",", 2)[1];
        const image = { name: file.name || "pasted.png", data: data, url: reader.result };
        images.push(image);
        const chip = attached.appendChild(el("span", "chip"));
        const img = chip.appendChild(el("img"));
        img.src = image.url;
        img.alt = image.name;
        const drop = chip.appendChild(el("button", "remove", "×"));
        drop.type = "button";
        drop.title = "remove " + image.name;
        drop.onclick = () => { images = images.filter((i) => i !== image); chip.remove(); };
      };
      reader.readAsDataURL(file);
    }
  }
  form.elements.image.addEventListener("change", (ev) => {
    attach(ev.target.files);
    ev.target.value = "";
  });
  form.elements.text.addEventListener("paste", (ev) => {
    const files = [...(ev.clipboardData || {}).files || []];
    if (files.length) { ev.preventDefault(); attach(files); }
  });
  const composer = form.parentNode;
  composer.addEventListener("dragover", (ev) => ev.preventDefault());
  composer.addEventListener("drop", (ev) => {
    ev.preventDefault();
    attach(ev.dataTransfer.files);
  });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = form.elements.text;
    if (!text.value.trim() && !images.length) return;
    const body = { text: text.value, images: images.map((i) => ({ name: i.name, data: i.data })) };
    const mine = images;
    post("/prompt", body).then((r) => {
      if (!r.ok) add(el("div", "line err", r.data.error));
    });
    sent.push({ text: text.value, images: mine });
    images = [];
    attached.textContent = "";
    text.value = "";
  });
  form.elements.text.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit();
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
