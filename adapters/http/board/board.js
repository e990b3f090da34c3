// The Logbook board: sessions grouped by phase, pending decisions on top,
// a page per session with its audit timeline and live command output.
// It reads /v1/ and follows /v1/stream; nothing is loaded from elsewhere.
"use strict";

const PHASES = ["waiting", "working", "ready", "ended"];
const ENDED_SHOWN = 50; // ended sessions listed unless "e" shows all
const state = {
  sessions: new Map(), // id -> summary
  pending: [],
  filter: "",
  showEnded: false,
  selected: null, // session id of the selected row
  route: null, // null: the board; else the session id of the page
  live: 0, // newest sequence seen, on the stream or by polling
  skew: 0, // the server's clock minus this browser's, ms (from /v1/sessions's now)
  priceError: "", // why rows have no cost (the list's price_error)
};

// Timings of the live updates and of the list's looks.
const POLL_S = 5; // polling period when the stream cannot be had, s
const CONNECT_WAIT_MS = 5000; // how long the stream may take to open
const CHECK_MS = 10000; // how often an open stream is checked for delivering
const RETRY_STREAM_MS = 30000; // how often polling tries the stream again
const QUIET_S = 60; // a working session with no observation for longer looks quiet

// now is the server's clock as this browser estimates it, ms.
function now() { return Date.now() + state.skew; }

// SHOWN are the attributes a person reads (as a tooltip, or from a
// screen reader): el and svg escape them as they do text.
const SHOWN = new Set(["title", "aria-label", "placeholder", "alt"]);
const esc = LogText.esc;

// el makes an element: attrs are its attributes ("class", and "text" for
// its text), kids its children. Every text it sets, the text kids and
// the attributes in SHOWN, is shown escaped (LogText.esc): an element
// made here cannot carry a control or bidirectional character from the
// log.
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = esc(v);
    else e.setAttribute(k, SHOWN.has(k) ? esc(v) : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(typeof k === "string" ? esc(k) : k);
  return e;
}

// lt is one text from the log in its own bidi-isolated element (<bdi>,
// dir=auto unless attrs say): whatever its direction, it cannot reorder
// the board's words beside it.
function lt(v, attrs) { return el("bdi", Object.assign({}, attrs || {}, { text: v === undefined || v === null ? "" : String(v) })); }

function age(t) {
  if (!t || t.startsWith("0001")) return "-";
  return ageS(Math.floor((now() - Date.parse(t)) / 1000));
}

// ageS is a duration of s seconds as the board shows it: 45s, 4m, 3h05m, 2d4h.
function ageS(s) {
  s = Math.max(0, s);
  if (s < 60) return s + "s";
  let m = Math.floor(s / 60);
  if (m < 60) return m + "m";
  let h = Math.floor(m / 60);
  if (h < 48) return h + "h" + String(m % 60).padStart(2, "0") + "m";
  return Math.floor(h / 24) + "d" + (h % 24) + "h";
}

// cwdCell is a path in a cell cut at its start (the cell is direction:
// rtl); the path itself is isolated and left-to-right.
function cwdCell(cwd) {
  return el("span", { class: "cwd dim", title: cwd || "" }, cwd ? lt(cwd, { dir: "ltr" }) : null);
}

function short(id) { return id.length > 24 ? id.slice(0, 23) + "…" : id; }

async function api(path, opts) {
  const r = await fetch(path, Object.assign({ credentials: "same-origin", headers: { "Accept": "application/json" } }, opts || {}));
  if (r.status === 401) { showLogin(); throw new Error("unauthorized"); }
  if (r.status === 403) showLogin(); // another user's, or the reader's token on a write
  if (!r.ok) {
    let msg = r.status + "";
    try { msg = esc((await r.json()).error) || msg; } catch (_) {}
    throw new Error(msg);
  }
  return r;
}
// getJSON reads path's JSON with every string in it escaped (LogText.clean).
async function getJSON(path) { return LogText.clean(await (await api(path)).json()); }

function showLogin() {
  document.getElementById("login").hidden = false;
}
document.getElementById("loginform").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = document.getElementById("token").value.trim();
  document.cookie = "logbook_token=" + encodeURIComponent(t) + "; path=/; SameSite=Strict; Secure";
  location.reload();
});

// ---- loading and following ----

async function loadAll() {
  let cursor = "", checkpoint = 0, first = true;
  const fresh = new Map();
  do {
    const q = "/v1/sessions?limit=1000" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
    const page = await getJSON(q);
    if (first) {
      checkpoint = page.checkpoint; first = false;
      if (page.now) state.skew = Date.parse(page.now) - Date.now();
      state.priceError = page.price_error || "";
    }
    for (const s of page.sessions) fresh.set(s.id, s);
    cursor = page.next || "";
  } while (cursor);
  state.sessions = fresh;
  await loadPending();
  return checkpoint;
}

async function loadPending(minSeq) {
  const d = await getJSON("/v1/pending" + (minSeq ? "?min_seq=" + minSeq : ""));
  state.pending = d.decisions;
}

const dirty = new Map(); // session id -> newest sequence seen for it
let pendingDirty = 0, flushTimer = null;

function scheduleFlush() {
  if (flushTimer) return;
  flushTimer = setTimeout(flush, 100);
}

async function flush() {
  flushTimer = null;
  const todo = [...dirty.entries()];
  dirty.clear();
  const pd = pendingDirty;
  pendingDirty = 0;
  await Promise.all(todo.slice(0, 64).map(async ([id, seq]) => {
    try {
      const d = await getJSON("/v1/sessions/" + encodeURIComponent(id) + "?summary=true&min_seq=" + seq);
      state.sessions.set(id, d.session);
    } catch (e) { /* not started yet: only observations */ }
  }));
  for (const [id, seq] of todo.slice(64)) dirty.set(id, seq);
  if (pd) { try { await loadPending(pd); } catch (_) {} }
  render();
  if (usageView) scheduleUsage();
  else if (state.route) pageEvent();
  if (dirty.size) scheduleFlush();
}

// ---- notifications (a board sink of notify.toml) ----

// Each notification.sent for a board sink is shown with the browser's
// Notification API once the person allowed it (the bell); its key is the
// notification's tag, so a repeat replaces rather than adds.
const told = new Set();
const bell = document.getElementById("bell");
function bellState() {
  if (!("Notification" in window)) { bell.hidden = true; return; }
  const p = Notification.permission;
  bell.className = "bell " + p;
  bell.title = p === "granted" ? "notifications on (" + told.size + " shown)" :
    p === "denied" ? "notifications blocked in this browser's settings" : "allow notifications";
  bell.dataset.told = String(told.size);
}
bell.addEventListener("click", async () => {
  if ("Notification" in window && Notification.permission === "default") await Notification.requestPermission();
  bellState();
});
function notifyBrowser(d) {
  if (!d || d.kind !== "board" || told.has(d.key)) return;
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  try {
    const n = new Notification(esc(d.title), { body: esc(d.body || ""), tag: d.key });
    n.onclick = () => { window.focus(); if (d.session) location.hash = "#/s/" + encodeURIComponent(d.session); };
    told.add(d.key);
  } catch (e) { /* this browser shows none from a page */ }
  bellState();
}
bellState();

// ---- live updates: the stream, else polling ----
// The board follows /v1/stream. A stream that does not open within
// CONNECT_WAIT_MS, that the server or a proxy closes for good, or that
// is open yet delivers nothing of what the server has (a proxy that
// buffers server-sent events: /v1/status's live runs ahead of it for a
// whole CHECK_MS) gives way to polling /v1/events every POLL_S seconds,
// and the header says so. Polling tries the stream again every
// RETRY_STREAM_MS and hands back to it once it delivers what polling
// has seen.

let source = null;
const conn = {
  mode: "connecting", // "live", "polling" or "connecting"
  seq: 0, // newest sequence the stream delivered
  openedAt: 0, // when the current stream was asked for, ms
  lagMark: 0, // the server's live sequence at the last check, if ahead of seq
  checkedAt: 0, // when the open stream was last checked, ms
  retryAt: 0, // when polling next tries the stream, ms
  why: "",
};

function showConn(text, cls, title) {
  const c = document.getElementById("conn");
  c.textContent = text;
  c.className = "conn " + cls;
  c.title = title || "live stream";
}

// onRecord takes one record of the log, from the stream or a poll.
function onRecord(r) {
  if (r.seq <= state.live) return; // taken in already, by the other way
  state.live = Math.max(state.live, r.seq);
  const agg = r.event.agg;
  if (agg.kind === "session") {
    dirty.set(agg.id, Math.max(dirty.get(agg.id) || 0, r.seq));
    pendingDirty = Math.max(pendingDirty, r.seq);
  } else if (agg.kind === "command") {
    const sess = r.event.data && r.event.data.session;
    if (sess) dirty.set(sess, Math.max(dirty.get(sess) || 0, r.seq));
    pageCommandEvent(agg.id, r.seq);
  } else if (agg.kind === "notification" && r.event.type === "notification.sent") {
    notifyBrowser(r.event.data);
    return;
  }
  scheduleFlush();
}

function follow(after) {
  if (source) source.close();
  conn.openedAt = Date.now();
  conn.seq = after;
  conn.lagMark = 0;
  const es = new EventSource("/v1/stream?after=" + after);
  source = es;
  es.onopen = () => {
    if (source !== es || conn.mode === "polling") return;
    conn.mode = "live";
    showConn("live", "on");
  };
  es.onerror = () => {
    if (source !== es) return;
    if (es.readyState === EventSource.CLOSED) {
      source = null;
      startPolling("the stream was refused");
    } else if (conn.mode === "live") {
      conn.mode = "connecting";
      conn.openedAt = Date.now();
      showConn("reconnecting", "off");
    }
  };
  es.addEventListener("record", (ev) => {
    if (source !== es) return;
    const r = LogText.clean(JSON.parse(ev.data));
    conn.seq = Math.max(conn.seq, r.seq);
    onRecord(r);
    if (conn.mode === "polling" && conn.seq >= state.live) stopPolling();
    if (conn.mode === "live") showConn("live · #" + r.seq, "on");
  });
  es.addEventListener("dropped", (ev) => {
    // The server let go of a slow stream: resume where it says.
    if (source !== es) return;
    const d = JSON.parse(ev.data);
    es.close();
    source = null;
    setTimeout(() => follow(d.resume_after), 500);
  });
}

let pollTimer = null, polling = false;

function startPolling(why) {
  if (conn.mode !== "polling") {
    conn.mode = "polling";
    conn.retryAt = Date.now() + RETRY_STREAM_MS;
  }
  conn.why = why;
  showConn("live updates unavailable, polling every " + POLL_S + "s", "off poll", why);
  if (source && source.readyState !== EventSource.OPEN) { source.close(); source = null; }
  if (!pollTimer) pollTimer = setInterval(poll, POLL_S * 1000);
  poll();
}

function stopPolling() {
  clearInterval(pollTimer);
  pollTimer = null;
  conn.mode = "live";
  conn.lagMark = 0;
  showConn("live · #" + conn.seq, "on");
}

// poll reads the events after the newest seen, as the stream would
// have sent them; far behind, it reads the list afresh instead.
async function poll() {
  if (polling) return;
  polling = true;
  try {
    for (let i = 0; i < 20; i++) {
      const d = await getJSON("/v1/events?after=" + state.live + "&limit=500");
      for (const r of d.events) onRecord(r);
      if (d.events.length < 500) return;
    }
    const cp = await loadAll();
    state.live = Math.max(state.live, cp);
    render();
  } catch (_) {
  } finally {
    polling = false;
    if (conn.mode === "polling" && Date.now() >= conn.retryAt && !source) {
      conn.retryAt = Date.now() + RETRY_STREAM_MS;
      follow(state.live);
    }
  }
}

// checkStream falls back to polling when the stream has not opened in
// time, or is open but the server's live sequence ran ahead of what it
// delivered for a whole check.
async function checkStream() {
  if (conn.mode === "polling") return;
  if (!source || source.readyState !== EventSource.OPEN) {
    if (Date.now() - conn.openedAt >= CONNECT_WAIT_MS) startPolling("the stream did not open");
    return;
  }
  if (Date.now() - conn.checkedAt < CHECK_MS) return;
  conn.checkedAt = Date.now();
  let st;
  try { st = await getJSON("/v1/status"); } catch (_) { return; }
  if (conn.mode !== "live") return;
  if (conn.lagMark && conn.seq < conn.lagMark) { startPolling("the stream delivers nothing"); return; }
  conn.lagMark = st.live > conn.seq ? st.live : 0;
}

// ---- the board ----

function matches(s) {
  const f = state.filter;
  if (!f) return true;
  return [s.id, s.cwd, s.model, s.activity, s.title, s.agent_type, s.phase].some((v) => v && v.toLowerCase().includes(f));
}

// seen is when the agent of s was last heard from, ms on the server's
// clock: its observed_at, or updated_at when nothing was observed.
function seen(s) {
  const t = s.observed_at && !s.observed_at.startsWith("0001") ? s.observed_at : s.updated_at;
  return Date.parse(t) || 0;
}

// quietFor is how long, in seconds, a working session has gone without
// an observation of its agent, when that is over QUIET_S; else 0.
function quietFor(s) {
  if (s.phase !== "working") return 0;
  const q = Math.floor((now() - seen(s)) / 1000);
  return q > QUIET_S ? q : 0;
}

// rowCost is what a session spent as a row shows it: "$1.23", "<$0.01",
// "$1.23+" when some model has no price, "no price", or "" when it spent
// nothing; and the title with the cost to four places and the tokens.
function rowCost(s) {
  if (!s.tokens) return ["", ""];
  const tok = s.tokens + " tokens";
  if (s.cost === null || s.cost === undefined) {
    if (state.priceError) return ["-", tok + "; " + state.priceError];
    return ["no price", tok + "; no price for " + (s.unpriced || []).join(", ")];
  }
  let text = s.cost > 0 && s.cost < 0.005 ? "<$0.01" : "$" + s.cost.toFixed(2);
  let title = "$" + s.cost.toFixed(4) + " for " + tok;
  if (s.unpriced && s.unpriced.length) { text += "+"; title += ", and no price for " + s.unpriced.join(", "); }
  return [text, title];
}

function sessionRow(s) {
  const oldest = s.open_entries ? age(s.oldest_open_at) : "";
  const q = quietFor(s);
  const [cost, costTitle] = rowCost(s);
  const what = el("span", { class: "what" });
  if (q) what.append(el("span", { class: "quiet-for", text: "quiet for " + ageS(q) }), " ");
  [s.activity, s.title].filter(Boolean).forEach((v, i) => what.append(i ? " · " : "", lt(v)));
  const a = el("a", { class: "row" + (state.selected === s.id ? " sel" : "") + (q ? " quiet" : ""), href: "#/s/" + encodeURIComponent(s.id), "data-id": s.id },
    el("span", { class: "phase " + s.phase, text: s.phase }),
    el("span", { class: "id", text: short(s.id), title: s.id }),
    what,
    el("span", { class: "dim age", text: age(s.since), title: "in this phase since " + s.since }),
    el("span", { class: "dim model", text: (s.model || "") + (oldest ? " · open " + oldest : ""), title: oldest ? "oldest open entry" : "" }),
    el("span", { class: "cost", text: cost, title: costTitle }),
    cwdCell(s.cwd));
  return a;
}

// order sorts a phase's rows: waiting and working the longest in their
// phase first, ready the most recently heard from first (so today's work
// is not buried under months-old imports), ended the last ended first.
function order(p) {
  return (a, b) => {
    let c;
    if (p === "ready") c = seen(b) - seen(a);
    else if (p === "ended") c = b.updated_at.localeCompare(a.updated_at);
    else c = a.since.localeCompare(b.since);
    return c || a.id.localeCompare(b.id);
  };
}

function render() {
  if (state.route) return;
  const groups = document.getElementById("groups");
  const focusedId = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.id : null;
  // Subagents fold under their parent when the parent is listed.
  const kids = new Map();
  const tops = [];
  for (const s of state.sessions.values()) {
    if (!matches(s)) continue;
    if (s.parent && state.sessions.has(s.parent)) {
      if (!kids.has(s.parent)) kids.set(s.parent, []);
      kids.get(s.parent).push(s);
    } else tops.push(s);
  }
  const by = new Map(PHASES.map((p) => [p, []]));
  for (const s of tops) (by.get(s.phase) || by.get("ended")).push(s);
  const frag = document.createDocumentFragment();
  const counts = [];
  for (const p of PHASES) {
    let list = by.get(p);
    list.sort(order(p));
    counts.push(p + " " + list.length);
    const total = list.length;
    if (p === "ended" && !state.showEnded) list = list.slice(0, ENDED_SHOWN);
    const sec = el("section", { id: "group-" + p, "aria-labelledby": "h-" + p, "data-phase": p });
    sec.append(el("h2", { id: "h-" + p }, p[0].toUpperCase() + p.slice(1), el("span", { class: "n", text: String(total) })));
    const ol = el("ol", { class: "rows" });
    for (const s of list) {
      const li = el("li", { "data-id": s.id, "data-phase": s.phase }, sessionRow(s));
      const ks = kids.get(s.id);
      if (ks && ks.length) {
        const det = el("details", { class: "kids" }, el("summary", { text: ks.length + " subagent" + (ks.length > 1 ? "s" : "") + " (" + ks.filter((k) => k.phase === "working" || k.phase === "waiting").length + " running)" }));
        const kol = el("ol", { class: "rows" });
        for (const k of ks) kol.append(el("li", { class: "child", "data-id": k.id, "data-phase": k.phase }, sessionRow(k)));
        det.append(kol);
        li.append(det);
      }
      ol.append(li);
    }
    if (!list.length) ol.append(el("li", { class: "empty", text: "none" }));
    if (p === "ended" && total > list.length) ol.append(el("li", { class: "empty", text: (total - list.length) + " more: press e" }));
    sec.append(ol);
    frag.append(sec);
  }
  groups.replaceChildren(frag);
  document.getElementById("counts").textContent = counts.join(" · ");
  renderPending();
  const want = focusedId || state.selected;
  if (want) {
    const a = groups.querySelector('a.row[data-id="' + CSS.escape(want) + '"]') || document.querySelector('#pending a.row[data-id="' + CSS.escape(want) + '"]');
    if (a && focusedId) a.focus({ preventScroll: true });
  }
}

// budgetText is what is left of a review's budget: "42s left", or
// "budget spent" past its deadline.
function budgetText(deadline) {
  const left = Math.floor((Date.parse(deadline) - now()) / 1000);
  return left > 0 ? ageS(left) + " left" : "budget spent";
}

// budgetSpan shows what is left of a review's budget, counting down.
function budgetSpan(deadline) {
  return el("span", { class: "budget", "data-deadline": deadline, text: budgetText(deadline), title: "the review's budget runs out at " + deadline + "; then the gate decides it timed_out" });
}

function renderPending() {
  const ol = document.getElementById("pending-list");
  const frag = document.createDocumentFragment();
  for (const d of state.pending) {
    const s = state.sessions.get(d.session);
    if (s && !matches(s)) continue;
    // What the decision is about: the tool and a short action, which
    // the server redacted and cut; no prompt text or output.
    // A review of the gate (answered here), a question, a permission
    // dialog on the agent's own screen, or some other wait.
    const label = d.kind === "review" ? "review" : d.activity === "question" ? "question" : d.activity === "review" ? "permission" : "waiting";
    const what = el("span", { class: "what" });
    if (d.tool) what.append(el("strong", { class: "tool" }, lt(d.tool)));
    if (d.action) what.append(" ", lt(d.action, { class: "action mono", title: d.action }));
    if (d.risk) what.append(" ", el("span", { class: "risk" }, "risk ", lt(d.risk)));
    if (!d.tool && !d.action) what.append(lt(d.activity || (d.review ? "review " + d.review : "")));
    const when = d.deadline
      ? budgetSpan(d.deadline)
      : el("span", { class: "dim", text: age(d.since), title: "waiting since " + d.since });
    frag.append(el("li", { "data-id": d.session, "data-kind": d.kind, "data-review": d.review },
      el("a", { class: "row", href: "#/s/" + encodeURIComponent(d.session), "data-id": d.session },
        el("span", { class: "phase waiting", text: label }),
        el("span", { class: "id", text: short(d.session), title: d.session }),
        what, when,
        cwdCell(d.cwd))));
  }
  if (!frag.childNodes.length) frag.append(el("li", { class: "empty", text: "nothing waits on a person" }));
  ol.replaceChildren(frag);
  document.getElementById("pending-n").textContent = String(state.pending.length);
}

// Budgets count down every second, without a whole render.
setInterval(() => {
  for (const b of document.querySelectorAll(".budget[data-deadline]")) b.textContent = budgetText(b.dataset.deadline);
}, 1000);

// ---- the session page ----

let page = null; // {id, commands: Map(id -> {state, offset, pre, busy})}

async function openPage(id) {
  const root = document.getElementById("page");
  page = { id, commands: new Map() };
  root.replaceChildren(el("p", { class: "dim", text: "loading " + id + " …" }));
  await pageEvent();
}

// subagentCard draws one subagent card of GET /v1/sessions/{id} (its
// text from the log is set as text, never as markup).
function subagentCard(c) {
  const id = c.session || "";
  const head = el("div", { class: "card-head" },
    id ? el("a", { class: "id", href: "#/s/" + encodeURIComponent(id), text: id }) : el("span", { class: "id", text: "task " + c.task }),
    el("span", { class: "phase " + (c.status === "running" ? "working" : c.status === "waiting" ? "waiting" : c.status === "ended" || c.status === "failed" ? "ended" : "ready"), text: c.status }),
    el("span", { class: "kind", text: c.kind + (c.type ? " · " + c.type : "") }),
    el("span", { class: "dim", text: "depth " + c.depth + " · " + (c.background ? "background" : "foreground") }));
  const nums = el("div", { class: "card-nums dim", text: c.turns + " turn" + (c.turns === 1 ? "" : "s") + " · " + c.tool_calls + " tool call" + (c.tool_calls === 1 ? "" : "s") + " · " + c.tokens + " tokens" + (c.end_reason ? " · ended: " + c.end_reason : "") });
  const li = el("li", { class: "card", "data-session": id, "data-kind": c.kind, "data-status": c.status, "data-background": c.background ? "true" : "false" }, head, nums);
  if (c.last_said) li.append(el("div", { class: "said", text: c.last_said }));
  if (c.diff) li.append(el("div", { class: "diff dim", text: "workspace " + c.workspace + ": " + c.diff.files + " file" + (c.diff.files === 1 ? "" : "s") + ", +" + c.diff.insertions + " -" + c.diff.deletions }));
  else if (c.workspace) li.append(el("div", { class: "diff dim", text: "workspace " + c.workspace }));
  return li;
}

async function pageEvent() {
  if (!page) return;
  const id = page.id;
  let d, audit;
  try {
    d = await getJSON("/v1/sessions/" + encodeURIComponent(id) + (state.live ? "?min_seq=" + state.live : ""));
  } catch (e) {
    // The API's message names the session already.
    document.getElementById("page").replaceChildren(el("p", { id: "page-error", text: e.message }), el("a", { href: "#/", text: "back" }));
    return;
  }
  try { audit = await getJSON("/v1/sessions/" + encodeURIComponent(id) + "/audit"); } catch (e) { audit = { items: [] }; }
  if (!page || page.id !== id) return;
  const s = d.session;
  const root = el("div", { id: "session", "data-id": s.id, "data-phase": s.phase });
  root.append(el("p", {}, el("a", { href: "#/", text: "← board" })));
  root.append(el("h2", {}, el("span", { class: "phase " + s.phase, id: "session-phase", text: s.phase }), el("span", { class: "id", text: s.id }),
    s.title ? lt(s.title, { id: "session-title", class: "title" }) : null));
  const kv = el("dl", { class: "kv" });
  const add = (k, v) => { if (v !== undefined && v !== null && v !== "") kv.append(el("dt", { text: k }), el("dd", {}, lt(String(v)))); };
  add("activity", s.activity); add("waiting on", s.waiting_on); add("since", s.since + " (" + age(s.since) + ")");
  add("agent", s.agent); add("model", s.model); add("cwd", s.cwd); add("branch", s.git_branch); add("mode", s.mode);
  add("parent", s.parent); add("turns", s.turns); add("tool calls", s.tool_calls); add("abandoned", s.abandoned);
  if (d.subagents) add("subagents", d.subagents.running + "/" + d.subagents.total + " (running/total)");
  add("last said", s.last_said);
  add("open entries", (s.entries || []).map((e) => e.activity + " (" + age(e.opened_at) + ")").join(", "));
  add("started", s.started_at); add("ended", s.end_reason);
  root.append(kv);
  if (window.Timeline) root.append(Timeline.section(s, d, audit.items || []));
  // What it spent, priced as `logbook session show` prices it; its
  // subagents' spend apart, never inside its own.
  const u = d.usage || {};
  const uk = el("dl", { class: "kv", id: "usage" });
  uk.append(el("dt", { text: "tokens" }), el("dd", { id: "usage-own", text: (u.own && u.own.text) || "-" }));
  if (u.subagents && u.subagents.text) uk.append(el("dt", { text: "subagents' tokens" }), el("dd", { id: "usage-subagents", text: u.subagents.text }));
  root.append(el("h2", { text: "Usage" }), uk);
  const reviews = s.pending_reviews || [];
  if (reviews.length) {
    root.append(el("h2", { text: "Open reviews" }));
    for (const rv of reviews) root.append(reviewForm(s.id, rv));
  }
  // A card a subagent, only when the session delegated: its kind,
  // depth, foreground or background, status, own numbers (never folded
  // into the parent's), the last thing it said, its workspace's diff.
  if (d.subagents) {
    root.append(el("h2", { text: "Subagents" }, el("span", { class: "n", id: "subagents-count", text: d.subagents.running + "/" + d.subagents.total + " running" })));
    const ol = el("ol", { class: "cards", id: "cards" });
    for (const c of d.cards || []) ol.append(subagentCard(c));
    root.append(ol);
  }
  root.append(el("h2", { text: "Commands" }));
  if (!d.commands.length) root.append(el("p", { class: "dim", text: "none" }));
  for (const c of d.commands) {
    const prev = page.commands.get(c.id);
    const pre = prev ? prev.pre : el("pre", { class: "out", "data-command": c.id });
    const entry = prev || { offset: 0, pre, busy: false };
    entry.state = c;
    page.commands.set(c.id, entry);
    root.append(el("h3", { class: "mono", text: c.id + " · " + c.status + (c.not_run ? " · did not run: " + c.not_run : c.exit_code !== undefined ? " · exit " + c.exit_code : "") + " · " + (c.argv || []).join(" ") }), pre);
    readOutput(c.id);
  }
  root.append(el("h2", { text: "Audit timeline" }));
  const t = el("table", { id: "audit" }, el("thead", {}, el("tr", {}, ...["seq", "at", "event", "from → to", "entry", "cause"].map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  for (const it of audit.items || []) {
    // An abandonment (an entry or a command given up, a stale mark)
    // links to the state just before it on the timeline.
    let before = null;
    if (window.Timeline && (it.type === "session.entry_abandoned" || it.type === "command.abandoned" || /\breason="?stale/.test(it.detail || ""))) {
      before = el("button", { type: "button", class: "before", "data-seq": String(it.seq), text: "state just before" });
      before.addEventListener("click", () => Timeline.stateBefore(s.id, it.seq));
    }
    tb.append(el("tr", { id: "audit-" + it.seq, "data-seq": String(it.seq) },
      el("td", { class: "mono", text: String(it.seq) }),
      el("td", { class: "mono dim", text: it.at }),
      el("td", {}, it.type, it.activity ? " " : null, it.activity ? lt(it.activity) : null,
        it.action ? el("div", { class: "action mono" }, lt(it.action, { title: it.action })) : null,
        it.detail ? el("div", { class: "dim" }, lt(it.detail)) : null, before),
      el("td", { text: it.from || it.to ? (it.from || "") + " → " + (it.to || "") : "" }),
      el("td", { class: "mono", text: it.entry || "" }),
      el("td", { class: "dim", text: it.cause ? it.cause.kind + "/" + it.cause.event : "" })));
  }
  t.append(tb);
  root.append(t);
  // Keep what a person was typing into a review form across the update.
  const kept = new Map();
  let focus = null;
  for (const f of document.querySelectorAll("#page form.review")) {
    kept.set(f.dataset.review, { reason: f.reason.value, by: f.by.value, msg: f.querySelector("[role=status]").textContent });
    if (f.contains(document.activeElement)) focus = [f.dataset.review, document.activeElement.name];
  }
  for (const f of root.querySelectorAll("form.review")) {
    const k = kept.get(f.dataset.review);
    if (k) { f.reason.value = k.reason; f.by.value = k.by || f.by.value; f.querySelector("[role=status]").textContent = k.msg; }
  }
  document.getElementById("page").replaceChildren(root);
  if (focus) {
    const f = root.querySelector('form.review[data-review="' + CSS.escape(focus[0]) + '"]');
    const i = f && focus[1] && f.querySelector('[name="' + focus[1] + '"]');
    if (i) i.focus();
  }
}

// reviewForm answers one open review: a reason, the person's name (kept
// in this browser), allow or deny.
function reviewForm(session, rv) {
  const f = el("form", { class: "review", "data-review": rv.id });
  f.append(el("p", {},
    el("strong", { class: "mono", text: rv.id }),
    el("span", { class: "what" }, ...[rv.tool && lt(rv.tool, { class: "tool" }), rv.action && lt(rv.action, { class: "action mono" }), rv.risk && el("span", { class: "risk" }, "risk ", lt(rv.risk))]
      .filter(Boolean).flatMap((x, i) => (i ? [" · ", x] : [" ", x]))),
    el("span", { class: "dim", text: " asked " + age(rv.requested_at) + " ago" }),
    rv.budget_ms ? " · " : null,
    rv.budget_ms ? budgetSpan(new Date(Date.parse(rv.requested_at) + rv.budget_ms).toISOString()) : null));
  const reason = el("input", { name: "reason", placeholder: "why (recorded)", required: "", maxlength: "1000", "aria-label": "reason" });
  const by = el("input", { name: "by", placeholder: "your name", required: "", pattern: "[A-Za-z0-9._@-]{1,64}", "aria-label": "your name" });
  by.value = localStorage.getItem("logbook-by") || "";
  const msg = el("span", { class: "dim", role: "status" });
  const send = async (verdict) => {
    if (!f.reportValidity()) return;
    localStorage.setItem("logbook-by", by.value);
    try {
      await api("/v1/reviews/" + encodeURIComponent(rv.id), {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ session, verdict, reason: reason.value, by: by.value }),
      });
      msg.textContent = verdict === "allow" ? "allowed" : "denied";
      f.dataset.answered = verdict;
    } catch (e) { msg.textContent = e.message; }
  };
  const allow = el("button", { type: "button", class: "allow", text: "Allow" });
  const deny = el("button", { type: "button", class: "deny", text: "Deny" });
  allow.addEventListener("click", () => send("allow"));
  deny.addEventListener("click", () => send("deny"));
  f.addEventListener("submit", (ev) => { ev.preventDefault(); send("allow"); });
  f.append(reason, " ", by, " ", allow, " ", deny, " ", msg);
  return f;
}

// plain is a command's output for display: terminal escape sequences
// (CSI, OSC) and carriage returns removed, what else LogText.esc escapes
// shown escaped but for newlines and tabs; the API has the exact bytes.
function plain(text) {
  return text.replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]/g, "").replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g, "").replace(/\r/g, "")
    .split("\n").map((l) => l.split("\t").map(esc).join("\t")).join("\n");
}

async function readOutput(id) {
  const c = page && page.commands.get(id);
  if (!c || c.busy) return;
  c.busy = true;
  try {
    for (;;) {
      const r = await api("/v1/commands/" + encodeURIComponent(id) + "/output?offset=" + c.offset);
      const buf = await r.arrayBuffer();
      if (buf.byteLength) {
        c.pre.append(document.createTextNode(plain(new TextDecoder().decode(buf, { stream: true }))));
        c.pre.scrollTop = c.pre.scrollHeight;
      }
      c.offset = Number(r.headers.get("Logbook-Next"));
      if (r.headers.get("Logbook-Done") === "true") { c.done = true; break; }
      if (!buf.byteLength) {
        await new Promise((ok) => setTimeout(ok, 500)); // live output is not on the event stream
        if (!page || !page.commands.has(id)) break;
      }
    }
  } catch (_) {
  } finally { c.busy = false; }
}

function pageCommandEvent(id) {
  if (page && page.commands.has(id)) readOutput(id);
}

// ---- the usage view ----
// Tokens and cost grouped by day, model, session or project, as
// `logbook usage --by …` prints them: the same columns, the same
// wording, costs to four places, "no price" for a model the price table
// does not name.

let usageView = null; // {by}
let usageTimer = null;

const BYS = ["day", "week", "month", "block", "model", "session", "project"];

function dashed(s) { return s && String(s).trim() ? String(s) : "-"; }
function costText(c) { return c === null || c === undefined ? "no price" : "$" + c.toFixed(4); }
function total(t) { return t.input + t.output + t.cache_write + t.cache_read; }

// usageColumns mirrors usage.Report.Columns.
function usageColumns(rep) {
  const byModel = rep.by === "model";
  const head = (byModel ? ["MODEL"] : [rep.by.toUpperCase(), "MODEL"]).concat(["INPUT", "OUTPUT", "CACHE WRITE", "OF IT 1H", "CACHE READ", "COST", "SUBAGENTS"]);
  const rows = rep.lines.map((l) => {
    let sub = "-";
    if (l.subagents) {
      sub = total(l.subagents) + " tokens";
      if (l.subagents_cost !== null && l.subagents_cost !== undefined) sub += ", $" + l.subagents_cost.toFixed(4);
    }
    const key = l.key + (l.parent ? " (subagent of " + l.parent + ")" : "");
    const cells = byModel ? [dashed(l.model)] : [dashed(key), dashed(l.model)];
    return cells.concat([String(l.tokens.input), String(l.tokens.output), String(l.tokens.cache_write), String(l.tokens.cache_write_1h || 0), String(l.tokens.cache_read), costText(l.cost), sub]);
  });
  return [head, rows];
}

// usageTotal mirrors usage.Report.TotalText.
function usageTotal(rep) {
  let sum = 0, unpriced = false;
  for (const l of rep.lines) { if (l.cost === null || l.cost === undefined) unpriced = true; else sum += l.cost; }
  let s = "total cost: $" + sum.toFixed(4) + (unpriced ? " (lines with no price are not in it)" : "") +
    "; prices: LiteLLM's table (" + rep.prices.litellm.version + ", read " + rep.prices.litellm.read + ") under Logbook's v" +
    rep.prices.version + " of " + rep.prices.date + ", " + rep.prices.currency + " per million tokens";
  if (rep.prices.override) s += ", with " + rep.prices.override + " over them";
  return s;
}

function table(id, head, rows) {
  const t = el("table", { id }, el("thead", {}, el("tr", {}, ...head.map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  for (const r of rows) tb.append(el("tr", {}, ...r.map((c) => el("td", { text: c }))));
  t.append(tb);
  return t;
}

async function openUsage(by, tz) {
  usageView = { by, tz };
  document.getElementById("page").replaceChildren(el("p", { class: "dim", text: "loading usage …" }));
  await loadUsage();
}

function scheduleUsage() {
  if (usageTimer) return;
  usageTimer = setTimeout(() => { usageTimer = null; loadUsage(); }, 1000);
}

async function loadUsage() {
  if (!usageView) return;
  const { by, tz } = usageView;
  let rep, day, sess;
  try {
    const q = (b) => getJSON("/v1/usage?by=" + b + "&tz=" + encodeURIComponent(tz));
    [rep, day, sess] = await Promise.all([q(by), by === "day" ? null : q("day"), by === "session" ? null : q("session")]);
    day = day || rep; sess = sess || rep;
  } catch (e) {
    document.getElementById("page").replaceChildren(el("p", { text: "usage: " + e.message }), el("a", { href: "#/", text: "back" }));
    return;
  }
  if (!usageView || usageView.by !== by || usageView.tz !== tz) return;
  const root = el("div", { id: "usage-view", "data-by": by, "data-tz": rep.tz });
  root.append(el("p", {}, el("a", { href: "#/", text: "← board" })));
  const at = (b, z) => "#/usage/" + b + (z === "UTC" ? "" : "?tz=" + z);
  const nav = el("p", { class: "by" }, "by ");
  for (const b of BYS) nav.append(b === by ? el("strong", { text: b }) : el("a", { href: at(b, tz), text: b }), " ");
  // Days are cut in UTC, as `logbook usage` does by default, or in this
  // browser's zone (`--tz <zone>`).
  const local = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  nav.append(" · days in ");
  for (const z of local === "UTC" ? ["UTC"] : ["UTC", local]) nav.append(z === tz ? el("strong", { text: z }) : el("a", { href: at(by, z), text: z }), " ");
  if (tz !== "UTC" && tz !== local) nav.append(el("strong", { text: tz }));
  root.append(el("h2", { text: "Usage" }), nav);
  root.append(spendCharts(day, sess));
  const [head, rows] = usageColumns(rep);
  root.append(table("usage-table", head, rows));
  root.append(el("p", { id: "usage-total", text: usageTotal(rep) }));
  if (rep.limits.length) {
    root.append(el("h2", { text: "Plan limits" }), el("p", { class: "dim", text: "latest reading per account and window" }));
    const lrows = rep.limits.map((l) => {
      let used = l.used_percent.toFixed(1) + "%";
      if (l.expired) used = "expired (was " + used + ")";
      let win = l.window;
      const m = l.window_minutes || 0;
      if (m > 0 && m % 1440 === 0) win += " (" + m / 1440 + "d)";
      else if (m > 0 && m % 60 === 0) win += " (" + m / 60 + "h)";
      else if (m > 0) win += " (" + m + "m)";
      const resets = l.resets_at > 0 ? new Date(l.resets_at * 1000).toISOString().replace(/\.\d+Z$/, "Z") : "-";
      const measured = new Date(l.measured_at).toISOString().replace(/\.\d+Z$/, "Z");
      return [l.account, win, used, resets, measured + " (" + age(l.measured_at) + " ago)"];
    });
    root.append(table("limits-table", ["ACCOUNT", "WINDOW", "USED", "RESETS", "MEASURED"], lrows));
  }
  document.getElementById("page").replaceChildren(root);
}

// ---- spend as pictures ----
// SVG drawn here from the same reports: spend by day stacked by model,
// by session, and each plan-limit window's use as a bar with its reset.
// Every shape carries its numbers (data-*) and a <title> with them as
// `logbook usage` prints them.

const SVGNS = "http://www.w3.org/2000/svg";
// svg is el for SVG: every text it sets is shown escaped the same way.
function svg(tag, attrs, ...kids) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = esc(v);
    else e.setAttribute(k, SHOWN.has(k) ? esc(v) : v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(typeof k === "string" ? esc(k) : k);
  return e;
}

const PALETTE = ["#1f6feb", "#c2410c", "#15803d", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#65a30d", "#6b7280"];
let chartMetric = "cost"; // "cost" or "tokens"

function metricOf(l) { return chartMetric === "cost" ? (l.cost || 0) : total(l.tokens); }
function metricText(v) { return chartMetric === "cost" ? "$" + v.toFixed(2) : v >= 1e6 ? (v / 1e6).toFixed(1) + "M" : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : String(v); }
function lineTitle(key, l) { return key + " · " + dashed(l.model) + ": " + costText(l.cost) + ", " + total(l.tokens) + " tokens"; }

// stacks groups report lines by key, in the report's (key) order, each
// key's models in the report's (model) order.
function stacks(rep) {
  const by = new Map();
  for (const l of rep.lines) {
    if (!by.has(l.key)) by.set(l.key, []);
    by.get(l.key).push(l);
  }
  return by;
}

function spendCharts(day, sess) {
  const models = [...new Set(day.lines.concat(sess.lines).map((l) => l.model))].sort();
  const color = (m) => PALETTE[models.indexOf(m) % PALETTE.length];
  const box = el("section", { id: "charts", "data-metric": chartMetric });
  const pick = el("p", { class: "metric" }, "chart ");
  for (const m of ["cost", "tokens"]) {
    const b = el("button", { type: "button", "aria-pressed": String(m === chartMetric), text: m });
    b.addEventListener("click", () => { chartMetric = m; box.replaceWith(spendCharts(day, sess)); });
    pick.append(b, " ");
  }
  if (chartMetric === "cost") pick.append(el("span", { class: "dim", text: "lines with no price count $0 here" }));
  // Colours go on through SVG attributes (the page's CSP allows no
  // inline style).
  const legend = el("p", { class: "legend" });
  for (const m of models) legend.append(el("span", { "data-model": m }, svg("svg", { width: 12, height: 12, class: "swatch" }, svg("rect", { width: 12, height: 12, fill: color(m) })), " " + dashed(m)));
  const charts = el("div", { class: "charts" }, dayChart(day, color), sessionChart(sess, color));
  if (day.limits.length) charts.append(limitsChart(day.limits));
  box.append(pick, charts, legend);
  return box;
}

// dayChart: a column per day, its models stacked, the day's sum on top.
function dayChart(rep, color) {
  const days = stacks(rep);
  const W = 600, H = 220, top = 18, bottom = 36, left = 8;
  const keys = [...days.keys()];
  const sums = keys.map((k) => days.get(k).reduce((a, l) => a + metricOf(l), 0));
  const max = Math.max(...sums, 0) || 1;
  const step = (W - left) / Math.max(keys.length, 1);
  const bw = Math.max(2, Math.min(48, step * 0.7));
  const g = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "spend by day, stacked by model", id: "chart-day" });
  g.append(svg("line", { class: "axis", x1: 0, x2: W, y1: H - bottom, y2: H - bottom }));
  keys.forEach((k, i) => {
    const x = left + i * step + (step - bw) / 2;
    let y = H - bottom;
    const col = svg("g", { class: "day", "data-key": k, "data-sum": String(sums[i]) });
    for (const l of days.get(k)) {
      const h = (metricOf(l) / max) * (H - top - bottom);
      y -= h;
      col.append(svg("rect", { class: "seg", x, y, width: bw, height: Math.max(h, 0), fill: color(l.model), "data-key": k, "data-model": l.model, "data-cost": costText(l.cost), "data-tokens": String(total(l.tokens)) },
        svg("title", { text: lineTitle(k, l) })));
    }
    col.append(svg("text", { class: "sum", x: x + bw / 2, y: y - 4, "text-anchor": "middle", text: metricText(sums[i]) }));
    if (keys.length <= 14 || i % Math.ceil(keys.length / 14) === 0) col.append(svg("text", { x: x + bw / 2, y: H - bottom + 14, "text-anchor": "middle", text: k.slice(5) }));
    g.append(col);
  });
  if (!keys.length) g.append(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", text: "nothing spent" }));
  return el("figure", { class: "chart" }, el("h3", { text: "By day (" + rep.tz + "), stacked by model" }), g);
}

const SESSIONS_CHARTED = 12;

// sessionChart: a bar per session, the most spent first, its models
// stacked; subagents are their own bars.
function sessionChart(rep, color) {
  const by = stacks(rep);
  const all = [...by.entries()].map(([k, ls]) => ({ k, ls, sum: ls.reduce((a, l) => a + metricOf(l), 0), parent: ls[0].parent }));
  all.sort((a, b) => b.sum - a.sum || a.k.localeCompare(b.k));
  const shown = all.slice(0, SESSIONS_CHARTED);
  const W = 600, row = 20, labelW = 190, H = Math.max(1, shown.length) * row + 8;
  const max = Math.max(...shown.map((s) => s.sum), 0) || 1;
  const g = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "spend by session", id: "chart-session" });
  shown.forEach((s, i) => {
    const y = 4 + i * row;
    const a = svg("a", { href: "#/s/" + encodeURIComponent(s.k), class: "session", "data-key": s.k, "data-sum": String(s.sum) });
    a.append(svg("text", { x: 0, y: y + 13, text: short(s.k).slice(0, 24) + (s.parent ? " ↳" : "") }, svg("title", { text: s.k + (s.parent ? " (subagent of " + s.parent + ")" : "") })));
    let x = labelW;
    for (const l of s.ls) {
      const w = (metricOf(l) / max) * (W - labelW - 70);
      a.append(svg("rect", { class: "seg", x, y: y + 2, width: Math.max(w, 0), height: row - 6, fill: color(l.model), "data-key": s.k, "data-model": l.model, "data-cost": costText(l.cost), "data-tokens": String(total(l.tokens)) },
        svg("title", { text: lineTitle(s.k, l) })));
      x += w;
    }
    a.append(svg("text", { class: "sum", x: x + 4, y: y + 13, text: metricText(s.sum) }));
    g.append(a);
  });
  if (!shown.length) g.append(svg("text", { x: W / 2, y: 14, "text-anchor": "middle", text: "nothing spent" }));
  const fig = el("figure", { class: "chart" }, el("h3", { text: "By session" + (all.length > shown.length ? " (the " + shown.length + " that spent most of " + all.length + ")" : "") }), g);
  return fig;
}

// windowText names a plan-limit window with its length: "primary (5h)".
function windowText(l) {
  const m = l.window_minutes || 0;
  if (m > 0 && m % 1440 === 0) return l.window + " (" + m / 1440 + "d)";
  if (m > 0 && m % 60 === 0) return l.window + " (" + m / 60 + "h)";
  if (m > 0) return l.window + " (" + m + "m)";
  return l.window;
}

function utcText(ms) { return new Date(ms).toISOString().replace(/\.\d+Z$/, "Z"); }

// limitsChart: each plan-limit window's latest reading as a bar of its
// use, with when it resets.
function limitsChart(limits) {
  const W = 1000, row = 34, H = limits.length * row + 4;
  const g = svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "plan limits", id: "chart-limits" });
  limits.forEach((l, i) => {
    const y = 2 + i * row;
    const resets = l.resets_at > 0 ? utcText(l.resets_at * 1000) : "-";
    const used = l.used_percent.toFixed(1) + "%";
    const w = Math.min(100, Math.max(0, l.used_percent)) / 100 * W;
    const gl = svg("g", { class: "limit", "data-account": l.account, "data-window": l.window, "data-used": used, "data-resets": resets, "data-expired": String(!!l.expired) });
    let right = l.expired ? "expired (was " + used + ")" : used + " used";
    if (l.resets_at > 0) right += l.expired ? ", reset " + resets : ", resets " + resets + " (in " + ageS(l.resets_at - Math.floor(now() / 1000)) + ")";
    gl.append(svg("text", { x: 0, y: y + 11 }, svg("tspan", { class: "lt", text: l.account }), " · ", svg("tspan", { class: "lt", text: windowText(l) })),
      svg("text", { x: W, y: y + 11, "text-anchor": "end", class: "resets", text: right }),
      svg("rect", { class: "track", x: 0, y: y + 15, width: W, height: 10, rx: 2 }),
      svg("rect", { class: "used" + (l.expired ? " expired" : l.used_percent >= 80 ? " high" : ""), x: 0, y: y + 15, width: w, height: 10, rx: 2 },
        svg("title", { text: l.account + " " + windowText(l) + ": " + used + ", measured " + utcText(Date.parse(l.measured_at)) })));
    g.append(gl);
  });
  return el("figure", { class: "chart limits" }, el("h3", { text: "Plan limits (latest reading per account and window)" }), g);
}

// ---- the workspaces view: each workspace's pre-push check runs ----
//
// What `logbook workspace checks ID` lists, per workspace: each run's
// status, exit status, timed_out, the tree it judged (commit and work
// tree digest, clean or not), when it started and how long it took, why
// (an error's or a cancel's reason) and how many pushes it allowed (the
// hook's permission, not a record that a push reached a remote). Every
// text goes through el (escaped); the view reloads every 2 s while open.

let workspacesView = false;
let workspacesTimer = null;

async function openWorkspaces() {
  workspacesView = true;
  document.getElementById("page").replaceChildren(el("p", { class: "dim", text: "loading workspaces …" }));
  await loadWorkspaces();
}

async function loadWorkspaces() {
  if (workspacesTimer) { clearTimeout(workspacesTimer); workspacesTimer = null; }
  if (!workspacesView) return;
  let d;
  try {
    d = await getJSON("/v1/workspaces");
  } catch (e) {
    document.getElementById("page").replaceChildren(el("p", { text: "workspaces: " + e.message }), el("a", { href: "#/", text: "back" }));
    return;
  }
  if (!workspacesView) return;
  const root = el("div", { id: "workspaces-view" }, el("h2", { text: "Workspaces and their pre-push checks" }), el("a", { href: "#/", text: "back" }));
  if (!d.workspaces.length) root.append(el("p", { class: "dim", text: "no workspaces" }));
  for (const w of d.workspaces) {
    const sec = el("section", { class: "workspace", "data-id": w.id, "data-status": w.status });
    sec.append(el("h3", {}, lt(w.name), " ", el("span", { class: "dim", text: w.id + " · " + w.status + (w.branch ? " · " + w.branch : "") })));
    if (!w.checks.length) {
      sec.append(el("p", { class: "dim", text: "no check runs" }));
    } else {
      const t = el("table", { class: "checks" }, el("thead", {}, el("tr", {}, ...["run", "status", "exit", "timed out", "commit", "tree", "clean", "trigger", "started", "took", "pushes allowed", "reason"].map((h) => el("th", { text: h })))));
      const tb = el("tbody");
      for (const c of w.checks) {
        const exit = c.exit_code === undefined || c.exit_code === null ? "-" : String(c.exit_code);
        const took = c.status === "running" ? "running" : ageS(Math.round((c.duration_ms || 0) / 1000));
        const tree = (c.tree || "").replace(/^sha256:/, "").slice(0, 12);
        tb.append(el("tr", { "data-run": c.id, "data-status": c.status, "data-exit": exit, "data-timed-out": String(!!c.timed_out) },
          el("td", { text: c.id }),
          el("td", { class: "check-status " + c.status, text: c.status }),
          el("td", { text: exit }),
          el("td", { text: c.timed_out ? "timed out" : "-" }),
          el("td", { class: "commit", title: c.commit || "", text: (c.commit || "-").slice(0, 12) }),
          el("td", { class: "tree", title: c.tree || "", text: tree || "-" }),
          el("td", { text: c.clean ? "clean" : "changes" }),
          el("td", { text: c.trigger || "-" }),
          el("td", { class: "started", title: c.started_at || "", text: c.started_at ? age(c.started_at) + " ago" : "-" }),
          el("td", { text: took }),
          el("td", { text: String((c.pushes || []).length) }),
          el("td", { class: "reason" }, lt(c.reason || ""))));
      }
      t.append(tb);
      sec.append(el("p", { class: "dim" }, "check: ", el("code", {}, lt(w.checks[0].command || ""))), t);
    }
    root.append(sec);
  }
  document.getElementById("page").replaceChildren(root);
  workspacesTimer = setTimeout(loadWorkspaces, 2000);
}

// ---- routes and keys ----

function route() {
  const m = location.hash.match(/^#\/s\/(.+)$/);
  const um = location.hash.match(/^#\/usage(?:\/(session|model|day|project))?(?:\?tz=([A-Za-z0-9_+\/-]+))?$/);
  const board = document.getElementById("board"), pg = document.getElementById("page");
  usageView = null;
  workspacesView = false;
  if (location.hash === "#/workspaces") {
    state.route = "workspaces"; page = null;
    board.hidden = true; pg.hidden = false;
    openWorkspaces();
  } else if (um) {
    state.route = "usage"; page = null;
    board.hidden = true; pg.hidden = false;
    openUsage(um[1] || "day", um[2] || "UTC");
  } else if (m) {
    state.route = decodeURIComponent(m[1]);
    state.selected = state.route;
    board.hidden = true; pg.hidden = false;
    openPage(state.route);
  } else {
    state.route = null; page = null;
    board.hidden = false; pg.hidden = true;
    render();
    const a = state.selected && document.querySelector('#groups a.row[data-id="' + CSS.escape(state.selected) + '"]');
    if (a) a.focus();
  }
}
window.addEventListener("hashchange", route);

function rows() { return [...document.querySelectorAll("#board:not([hidden]) a.row")].filter((a) => a.offsetParent !== null); }

document.addEventListener("keydown", (ev) => {
  const inInput = ev.target instanceof HTMLInputElement;
  if (ev.key === "Escape") {
    if (inInput) { ev.target.blur(); return; }
    if (state.route) { location.hash = "#/"; ev.preventDefault(); }
    return;
  }
  if (inInput || ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if (ev.key === "/") { ev.preventDefault(); document.getElementById("filter").focus(); return; }
  if (ev.key === "e") { state.showEnded = !state.showEnded; render(); return; }
  if (ev.key === "u") { location.hash = "#/usage"; return; }
  if (state.route) return;
  if (ev.key === "j" || ev.key === "k" || ev.key === "ArrowDown" || ev.key === "ArrowUp") {
    const rs = rows();
    if (!rs.length) return;
    let i = rs.indexOf(document.activeElement);
    i = (ev.key === "j" || ev.key === "ArrowDown") ? Math.min(rs.length - 1, i + 1) : Math.max(0, i - 1);
    rs[i].focus();
    state.selected = rs[i].dataset.id;
    ev.preventDefault();
  }
});
document.addEventListener("focusin", (ev) => {
  if (ev.target instanceof HTMLAnchorElement && ev.target.dataset.id) state.selected = ev.target.dataset.id;
});
document.getElementById("filter").addEventListener("input", (ev) => { state.filter = ev.target.value.trim().toLowerCase(); render(); });
setInterval(() => { if (!state.route) render(); }, 15000); // ages move on

(async function start() {
  try {
    // The first paint comes from the JSON API; the stream then keeps
    // it live.
    const cp = await loadAll();
    state.live = cp;
    route();
    follow(cp);
    setInterval(checkStream, 1000);
  } catch (e) {
    document.getElementById("groups").replaceChildren(el("p", { text: "cannot load sessions: " + e.message }));
  }
})();
