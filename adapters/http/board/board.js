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
  live: 0, // newest sequence seen on the stream
};

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k);
  return e;
}

function age(t) {
  if (!t || t.startsWith("0001")) return "-";
  let s = Math.max(0, Math.floor((Date.now() - Date.parse(t)) / 1000));
  if (s < 60) return s + "s";
  let m = Math.floor(s / 60);
  if (m < 60) return m + "m";
  let h = Math.floor(m / 60);
  if (h < 48) return h + "h" + String(m % 60).padStart(2, "0") + "m";
  return Math.floor(h / 24) + "d" + (h % 24) + "h";
}

// ltr keeps a path left-to-right in a cell cut at its start (direction: rtl).
function ltr(s) { return s ? "\u200e" + s + "\u200e" : ""; }

function short(id) { return id.length > 24 ? id.slice(0, 23) + "…" : id; }

async function api(path, opts) {
  const r = await fetch(path, Object.assign({ credentials: "same-origin", headers: { "Accept": "application/json" } }, opts || {}));
  if (r.status === 401) { showLogin(); throw new Error("unauthorized"); }
  if (r.status === 403) showLogin(); // another user's, or the reader's token on a write
  if (!r.ok) {
    let msg = r.status + "";
    try { msg = (await r.json()).error || msg; } catch (_) {}
    throw new Error(msg);
  }
  return r;
}
async function getJSON(path) { return (await api(path)).json(); }

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
    if (first) { checkpoint = page.checkpoint; first = false; }
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
    const n = new Notification(d.title, { body: d.body || "", tag: d.key });
    n.onclick = () => { window.focus(); if (d.session) location.hash = "#/s/" + encodeURIComponent(d.session); };
    told.add(d.key);
  } catch (e) { /* this browser shows none from a page */ }
  bellState();
}
bellState();

let source = null;
function follow(after) {
  if (source) source.close();
  source = new EventSource("/v1/stream?after=" + after);
  const conn = document.getElementById("conn");
  source.onopen = () => { conn.textContent = "live"; conn.className = "conn on"; };
  source.onerror = () => { conn.textContent = "reconnecting"; conn.className = "conn off"; };
  source.addEventListener("record", (ev) => {
    const r = JSON.parse(ev.data);
    state.live = r.seq;
    conn.textContent = "live · #" + r.seq;
    const agg = r.event.agg;
    if (agg.kind === "session") {
      dirty.set(agg.id, r.seq);
      pendingDirty = r.seq;
    } else if (agg.kind === "command") {
      const sess = r.event.data && r.event.data.session;
      if (sess) dirty.set(sess, r.seq);
      pageCommandEvent(agg.id, r.seq);
    } else if (agg.kind === "notification" && r.event.type === "notification.sent") {
      notifyBrowser(r.event.data);
      return;
    }
    scheduleFlush();
  });
  source.addEventListener("dropped", (ev) => {
    // The server let go of a slow stream: resume where it says.
    const d = JSON.parse(ev.data);
    setTimeout(() => follow(d.resume_after), 500);
  });
}

// ---- the board ----

function matches(s) {
  const f = state.filter;
  if (!f) return true;
  return [s.id, s.cwd, s.model, s.activity, s.title, s.agent_type, s.phase].some((v) => v && v.toLowerCase().includes(f));
}

function sessionRow(s) {
  const oldest = s.open_entries ? age(s.oldest_open_at) : "";
  const a = el("a", { class: "row" + (state.selected === s.id ? " sel" : ""), href: "#/s/" + encodeURIComponent(s.id), "data-id": s.id },
    el("span", { class: "phase " + s.phase, text: s.phase }),
    el("span", { class: "id", text: short(s.id), title: s.id }),
    el("span", { text: [s.activity, s.title].filter(Boolean).join(" · ") }),
    el("span", { class: "dim", text: age(s.since), title: "in this phase since " + s.since }),
    el("span", { class: "dim", text: (s.model || "") + (oldest ? " · open " + oldest : ""), title: oldest ? "oldest open entry" : "" }),
    el("span", { class: "cwd dim", text: ltr(s.cwd), title: s.cwd || "" }));
  return a;
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
    list.sort((a, b) => (p === "ended" ? b.updated_at.localeCompare(a.updated_at) : a.since.localeCompare(b.since)) || a.id.localeCompare(b.id));
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
        const det = el("details", { class: "kids" }, el("summary", { text: ks.length + " subagent" + (ks.length > 1 ? "s" : "") + " (" + ks.filter((k) => k.phase !== "ended").length + " live)" }));
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

function renderPending() {
  const ol = document.getElementById("pending-list");
  const frag = document.createDocumentFragment();
  for (const d of state.pending) {
    const s = state.sessions.get(d.session);
    if (s && !matches(s)) continue;
    // Only what the decision is about: no prompt text, arguments or output.
    frag.append(el("li", { "data-id": d.session, "data-kind": d.kind },
      el("a", { class: "row", href: "#/s/" + encodeURIComponent(d.session), "data-id": d.session },
        el("span", { class: "phase waiting", text: d.kind === "review" ? "review" : "waiting" }),
        el("span", { class: "id", text: short(d.session), title: d.session }),
        el("span", { text: d.activity || (d.review ? "review " + d.review : "") }),
        el("span", { class: "dim", text: age(d.since) }),
        el("span", { class: "cwd dim", text: ltr(d.cwd), title: d.cwd || "" }))));
  }
  if (!frag.childNodes.length) frag.append(el("li", { class: "empty", text: "nothing waits on a person" }));
  ol.replaceChildren(frag);
  document.getElementById("pending-n").textContent = String(state.pending.length);
}

// ---- the session page ----

let page = null; // {id, commands: Map(id -> {state, offset, pre, busy})}

async function openPage(id) {
  const root = document.getElementById("page");
  page = { id, commands: new Map() };
  root.replaceChildren(el("p", { class: "dim", text: "loading " + id + " …" }));
  await pageEvent();
}

async function pageEvent() {
  if (!page) return;
  const id = page.id;
  let d, audit;
  try {
    d = await getJSON("/v1/sessions/" + encodeURIComponent(id) + (state.live ? "?min_seq=" + state.live : ""));
  } catch (e) {
    document.getElementById("page").replaceChildren(el("p", { text: "session " + id + ": " + e.message }), el("a", { href: "#/", text: "back" }));
    return;
  }
  try { audit = await getJSON("/v1/sessions/" + encodeURIComponent(id) + "/audit"); } catch (e) { audit = { items: [] }; }
  if (!page || page.id !== id) return;
  const s = d.session;
  const root = el("div", { id: "session", "data-id": s.id, "data-phase": s.phase });
  root.append(el("p", {}, el("a", { href: "#/", text: "← board" })));
  root.append(el("h2", {}, el("span", { class: "phase " + s.phase, id: "session-phase", text: s.phase }), el("span", { class: "id", text: s.id })));
  const kv = el("dl", { class: "kv" });
  const add = (k, v) => { if (v !== undefined && v !== null && v !== "") kv.append(el("dt", { text: k }), el("dd", { text: String(v) })); };
  add("activity", s.activity); add("waiting on", s.waiting_on); add("since", s.since + " (" + age(s.since) + ")");
  add("agent", s.agent); add("model", s.model); add("cwd", s.cwd); add("branch", s.git_branch); add("mode", s.mode);
  add("parent", s.parent); add("turns", s.turns); add("tool calls", s.tool_calls); add("abandoned", s.abandoned);
  add("open entries", (s.entries || []).map((e) => e.activity + " (" + age(e.opened_at) + ")").join(", "));
  add("started", s.started_at); add("ended", s.end_reason);
  root.append(kv);
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
  if (d.children.length) {
    root.append(el("h2", { text: "Subagents" }));
    const ol = el("ol", { class: "rows" });
    for (const k of d.children) ol.append(el("li", {}, sessionRow(k)));
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
    root.append(el("h3", { class: "mono", text: c.id + " · " + c.status + (c.exit_code !== undefined ? " · exit " + c.exit_code : "") + " · " + (c.argv || []).join(" ") }), pre);
    readOutput(c.id);
  }
  root.append(el("h2", { text: "Audit timeline" }));
  const t = el("table", { id: "audit" }, el("thead", {}, el("tr", {}, ...["seq", "at", "event", "from → to", "entry", "cause"].map((h) => el("th", { text: h })))));
  const tb = el("tbody");
  for (const it of audit.items || []) {
    tb.append(el("tr", {},
      el("td", { class: "mono", text: String(it.seq) }),
      el("td", { class: "mono dim", text: it.at }),
      el("td", { text: it.type + (it.activity ? " " + it.activity : "") }),
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
    el("span", { text: " " + [rv.tool, rv.action, rv.risk && "risk " + rv.risk].filter(Boolean).join(" · ") }),
    el("span", { class: "dim", text: " asked " + age(rv.requested_at) + " ago" })));
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

// Strip terminal escape sequences for display; the API has the exact bytes.
function plain(text) {
  return text.replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]/g, "").replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g, "").replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "");
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
  let rep;
  try {
    rep = await getJSON("/v1/usage?by=" + by + "&tz=" + encodeURIComponent(tz));
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

// ---- routes and keys ----

function route() {
  const m = location.hash.match(/^#\/s\/(.+)$/);
  const um = location.hash.match(/^#\/usage(?:\/(session|model|day|project))?(?:\?tz=([A-Za-z0-9_+\/-]+))?$/);
  const board = document.getElementById("board"), pg = document.getElementById("page");
  usageView = null;
  if (um) {
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
    const cp = await loadAll();
    follow(cp);
    route();
  } catch (e) {
    document.getElementById("groups").replaceChildren(el("p", { text: "cannot load sessions: " + e.message }));
  }
})();
