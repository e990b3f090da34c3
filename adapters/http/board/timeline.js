// The session page's timeline: a swimlane picture of a session's audit
// (GET /v1/sessions/{id}/audit and its subagents'), a scrubber showing
// the session's state as of any event (GET /v1/sessions/{id}/at?seq=N,
// the fold of `logbook replay --seq N --session ID --json`), and the
// first event today's reducer decides differently from the record
// (GET /v1/sessions/{id}/rederive). Plain SVG built with createElementNS
// and textContent: every string from a session is data, never markup, and
// is shown escaped (logtext.js): what the API sends is cleaned as it is
// read, and S and H escape every text they set.
//
// The x axis is the order of events (each a stream sequence), not the
// clock: a burst of decisions in one millisecond and an hour's wait take
// the same room; each mark's title gives its times and durations.
"use strict";

(function () {
  const NS = "http://www.w3.org/2000/svg";
  const LABEL = 112; // px for the lane names
  const LANE = 22; // px per lane
  const AXIS = 26; // px of the scrub strip on top
  const MERGE = 4; // px: marks narrower than this may merge into one with a count
  const BIN = 24; // px: the narrow marks beginning in one bin of this width merge
  const MAX_KIDS = 24; // subagent lanes drawn at most
  const PHASE_COLORS = { working: "var(--working)", waiting: "var(--waiting)", ready: "var(--ready)", ended: "var(--ended)" };

  // Per session, kept across the page's re-renders: the view, the
  // cursor, and what was fetched.
  const views = new Map();
  function view(id) {
    let v = views.get(id);
    if (!v) {
      v = { lo: 0, hi: -1, fit: true, cursor: -1, cursorSeq: 0, follow: true, at: new Map(), kids: new Map(), rederive: null, rederiveKey: "", timer: null, selected: 0 };
      views.set(id, v);
    }
    return v;
  }

  const esc = LogText.esc;
  const SHOWN = new Set(["title", "aria-label"]);

  // getJSON reads an API path's JSON with every string in it escaped
  // (LogText.clean), and the body as sent; on an error status it
  // rejects with the API's message.
  async function getJSON(path) {
    const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
    let body = null;
    try { body = await r.json(); } catch (_) {}
    if (!r.ok) throw new Error(esc((body && body.error) || String(r.status)));
    return { raw: body, data: LogText.clean(body) };
  }

  // S makes an SVG element with text (a tooltip's lines are the
  // timeline's own: each line is shown escaped).
  function S(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const [k, val] of Object.entries(attrs || {})) if (val !== undefined && val !== null) e.setAttribute(k, SHOWN.has(k) ? esc(val) : String(val));
    if (text !== undefined) e.textContent = LogText.escLines(text);
    return e;
  }
  // H is board.js's el: every text it sets is shown escaped.
  function H(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, val] of Object.entries(attrs || {})) {
      if (val === undefined || val === null || val === false) continue;
      if (k === "class") e.className = val;
      else if (k === "text") e.textContent = esc(val);
      else e.setAttribute(k, SHOWN.has(k) ? esc(val) : val);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(typeof k === "string" ? esc(k) : k);
    return e;
  }
  // T is one text from the log in its own bidi-isolated element.
  function T(v, attrs) { return H("bdi", Object.assign({}, attrs || {}, { text: v === undefined || v === null ? "" : String(v) })); }

  // tickFacts are the facts a stored reconciler tick (events.Tick) rests
  // on, as lines: when it looked, the last observation and the quiet
  // period, when open entries go stale, the agent process's check.
  function tickFacts(t) {
    const out = [];
    if (!t) return out;
    out.push("looked at " + t.now);
    if (t.last_observed && !t.last_observed.startsWith("0001")) out.push("last observed " + t.last_observed + " (" + dur(t.last_observed, t.now) + " before)" + (t.last_ref ? " from " + t.last_ref : ""));
    if (t.last_received && !t.last_received.startsWith("0001")) out.push("last received " + t.last_received);
    out.push(t.quiet_ms ? "quiet period " + dur(0, t.quiet_ms) + " after the last received" : "no quiet period");
    out.push(t.abandon_after_ms ? "open entries go stale after " + dur(0, t.abandon_after_ms) + " idle" : "open entries never go stale");
    if (t.check) {
      const p = t.check.process || {};
      out.push("process check: pid " + p.pid + (p.comm ? " (" + p.comm + ")" : "") + " on " + (p.host || "?") + ": " + t.check.result + (t.check.detail ? " (" + t.check.detail + ")" : ""));
    } else out.push("process check: none (no agent process known)");
    if (t.clock_offset_ms) out.push("agent clock offset " + t.clock_offset_ms + " ms");
    return out;
  }

  // detail parses an audit item's "key=value key=\"quoted value\"" text.
  function detail(s) {
    const out = {};
    if (!s) return out;
    const re = /([A-Za-z_]+)=("(?:[^"\\]|\\.)*"|\S*)/g;
    let m;
    while ((m = re.exec(s))) {
      let v = m[2];
      if (v.startsWith('"')) { try { v = JSON.parse(v); } catch (_) { v = v.slice(1, -1); } }
      out[m[1]] = v;
    }
    return out;
  }

  // dur is the time from a to b (RFC 3339 times, or a number of ms each).
  function dur(a, b) {
    const ms = (typeof b === "number" ? b : Date.parse(b)) - (typeof a === "number" ? a : Date.parse(a));
    if (!(ms >= 0)) return "";
    if (ms < 1000) return ms + " ms";
    const s = ms / 1000;
    if (s < 60) return s.toFixed(1) + " s";
    const m = Math.floor(s / 60);
    if (m < 60) return m + " m " + Math.round(s % 60) + " s";
    return Math.floor(m / 60) + " h " + (m % 60) + " m";
  }

  // why is an item's cause and observed input, as one line.
  function why(it) {
    const parts = [];
    if (it.cause) parts.push("cause " + it.cause.kind + "/" + it.cause.event + (it.cause.detail ? " (" + it.cause.detail + ")" : ""));
    if (it.obs) parts.push("observed #" + it.obs.seq + " " + it.obs.type + " " + it.obs.kind + (it.obs.signals && it.obs.signals.length ? " [" + it.obs.signals.join(", ") + "]" : ""));
    return parts.join(" ← ");
  }

  function title(it) {
    let t = "#" + it.seq + " " + it.at + "\n" + it.type;
    if (it.from || it.to) t += " " + (it.from || "") + " → " + (it.to || "");
    if (it.activity) t += " " + it.activity;
    if (it.entry) t += " " + it.entry;
    if (it.detail) t += "\n" + it.detail;
    const w = why(it);
    if (w) t += "\n" + w;
    return t;
  }

  // lanesOf turns one session's audit items into lanes of marks; pos maps
  // a seq to its x position (index on the shared axis). A mark is
  // {x0, x1, seq, kind, label, title, open}; x1 === x0 for a point.
  function lanesOf(items, pos, end, own) {
    const phase = [], turns = [], tools = [], cmds = [], reviews = [], marks = [];
    let cur = null;
    const openSpan = (it, ph, act) => {
      if (cur) { cur.x1 = pos(it.seq); cur.title += "\nuntil #" + it.seq + " (" + dur(cur.at, it.at) + ")"; phase.push(cur); }
      cur = { x0: pos(it.seq), x1: end, seq: it.seq, kind: "phase " + ph, label: ph + (act ? " · " + act : ""), at: it.at, title: ph + (act ? " · " + act : "") + "\nfrom " + title(it), phase: ph };
    };
    const opened = new Map(); // entry -> mark
    for (const it of items) {
      const d = detail(it.detail);
      // An entry event may carry the phase move it caused (a command's
      // attach or detach): the phase lane moves with it.
      if ((it.type === "session.entry_opened" || it.type === "session.entry_closed") && it.to) openSpan(it, it.to, d.phase_activity || "");
      switch (it.type) {
        case "session.started": openSpan(it, "ready", ""); break;
        case "session.transitioned":
          openSpan(it, it.to, it.activity);
          if (it.to === "waiting") marks.push({ x0: pos(it.seq), x1: pos(it.seq), seq: it.seq, kind: "wait", label: "waits", title: "waits on a person: " + (it.activity || "") + " " + (it.entry || "") + "\n" + title(it) });
          break;
        case "session.ended":
          openSpan(it, "ended", d.reason || "");
          marks.push({ x0: pos(it.seq), x1: pos(it.seq), seq: it.seq, kind: "end", label: "ended", title: "ended: " + (d.reason || "") + "\n" + title(it) });
          break;
        case "session.turn_started": {
          const m = { x0: pos(it.seq), x1: end, seq: it.seq, kind: "turn", label: it.entry || "turn", title: (it.entry || "turn") + " started\n" + title(it), open: true, at: it.at };
          opened.set(it.entry, m); turns.push(m); break;
        }
        case "session.turn_ended": {
          const m = opened.get(it.entry);
          if (m) { m.x1 = pos(it.seq); m.open = false; m.title += "\nended " + (d.outcome || "") + " at #" + it.seq + " after " + dur(m.at, it.at); }
          break;
        }
        case "session.entry_opened": {
          const isCmd = (it.entry || "").startsWith("cmd-");
          if (isCmd && opened.has(it.entry)) break; // the command's request opened it
          const m = { x0: pos(it.seq), x1: end, seq: it.seq, kind: isCmd ? "command" : "tool", label: it.activity || it.entry, title: (it.activity || "") + " " + (it.entry || "") + " opened\n" + title(it), open: true, at: it.at };
          opened.set(it.entry, m); (isCmd ? cmds : tools).push(m); break;
        }
        case "session.entry_closed":
        case "session.entry_late_result": {
          const m = opened.get(it.entry);
          if (m && m.open) { m.x1 = pos(it.seq); m.open = false; m.title += "\nclosed " + (d.outcome || "") + " at #" + it.seq + " after " + dur(m.at, it.at); if (d.outcome && d.outcome !== "ok") m.kind += " " + d.outcome.replace(/[^a-z_]/g, ""); }
          break;
        }
        case "session.entry_abandoned": {
          const m = opened.get(it.entry);
          if (m && m.open) { m.x1 = pos(it.seq); m.open = false; m.kind += " abandoned"; m.title += "\nABANDONED (" + (d.reason || "") + ") at #" + it.seq + " after " + dur(m.at, it.at); }
          marks.push({ x0: pos(it.seq), x1: pos(it.seq), seq: it.seq, kind: "abandon", label: "abandoned", entry: it.entry, title: "abandoned " + (it.entry || "") + ": " + (d.reason || "") + (d.evidence ? " (" + d.evidence + ")" : "") + "\n" + title(it) });
          break;
        }
        case "command.requested": {
          const m = { x0: pos(it.seq), x1: end, seq: it.seq, kind: "command", label: (d.argv || it.activity || it.entry), title: "command " + (d.argv || "") + " requested by " + (d.requested_by || "?") + "\n" + title(it), open: true, at: it.at };
          opened.set(it.entry, m); cmds.push(m); break;
        }
        case "command.exited": case "command.abandoned": case "command.refused": case "command.evicted": {
          const m = opened.get(it.entry);
          if (m && m.open) {
            m.x1 = pos(it.seq); m.open = false;
            m.title += "\n" + it.type.slice(8) + (d.code !== undefined ? " code " + d.code : "") + " at #" + it.seq + " after " + dur(m.at, it.at);
            if (it.type !== "command.exited") m.kind += " abandoned";
            else if (d.code && d.code !== "0") m.kind += " error";
          }
          if (it.type === "command.abandoned") marks.push({ x0: pos(it.seq), x1: pos(it.seq), seq: it.seq, kind: "abandon", label: "abandoned", entry: it.entry, title: "command abandoned\n" + title(it) });
          break;
        }
        case "review.requested": {
          const m = { x0: pos(it.seq), x1: end, seq: it.seq, kind: "review", label: "review " + (d.tool || "") + (d.action ? " " + d.action : ""), title: "review requested: " + (d.tool || "") + " " + (d.action || "") + (d.risk ? " risk " + d.risk : "") + "\n" + title(it), open: true, at: it.at };
          opened.set("review:" + it.entry, m); reviews.push(m); break;
        }
        case "review.decided": {
          const m = opened.get("review:" + it.entry);
          const by = d.decided_by || (it.cause && it.cause.kind === "gate" ? "gate" : "the agent's prompt");
          if (m && m.open) {
            m.x1 = pos(it.seq); m.open = false; m.decided = it.seq;
            m.label = (d.verdict || d.outcome || "decided") + " by " + by;
            m.kind += " " + (d.verdict === "deny" ? "deny" : "allow");
            m.title += "\ndecided " + (d.verdict || "") + " " + (d.outcome || "") + " by " + by + (d.reason ? ": " + d.reason : "") + " at #" + it.seq + " after " + dur(m.at, it.at);
          }
          break;
        }
      }
    }
    if (cur) phase.push(cur);
    if (!own) return [{ name: "", kind: "phase", marks: phase.concat(marks) }];
    return [
      { name: "phase", kind: "phase", marks: phase },
      { name: "turns", kind: "turns", marks: turns },
      { name: "tool calls", kind: "tools", marks: tools },
      { name: "commands", kind: "commands", marks: cmds },
      { name: "reviews", kind: "reviews", marks: reviews },
      { name: "waits, abandons", kind: "marks", marks: marks },
    ];
  }

  // pack merges, in one lane, the marks narrower than MERGE px that
  // begin in the same bin of BIN px into one aggregate mark with a count
  // (room for three digits): at most one aggregate per bin, however
  // dense the lane.
  function pack(marks, px) {
    const out = [];
    const sorted = marks.slice().sort((a, b) => a.x0 - b.x0 || a.seq - b.seq);
    for (const m of sorted) {
      const a = px(m.x0), b = px(m.x1);
      const narrow = b - a < MERGE;
      const bin = Math.floor(a / BIN);
      const last = out[out.length - 1];
      if (narrow && last && last.narrow && last.bin === bin) {
        last.group.push(m); last.b = Math.max(last.b, b, a + 2);
        continue;
      }
      out.push({ a, b: Math.max(b, a + (narrow ? 2 : 0)), narrow, bin, group: [m] });
    }
    return out;
  }

  function section(s, d, items) {
    const v = view(s.id);
    const sec = H("section", { id: "timeline", "aria-label": "timeline" });
    const bar = H("div", { class: "tl-bar" });
    const zin = H("button", { type: "button", id: "tl-zoom-in", text: "+", title: "zoom in (wheel)" });
    const zout = H("button", { type: "button", id: "tl-zoom-out", text: "−", title: "zoom out (wheel)" });
    const fit = H("button", { type: "button", id: "tl-fit", text: "all", title: "show the whole session" });
    const hint = H("span", { class: "dim", text: "drag the cursor on the top strip or use ← → to see the state as of an event · drag the lanes to pan · wheel to zoom · click a mark for its audit entry" });
    bar.append(zin, " ", zout, " ", fit, " ", hint);
    const wrap = H("div", { class: "tl-wrap" });
    const plot = H("div", { class: "tl-plot" });
    const side = H("aside", { id: "tl-state", "aria-live": "polite" });
    const pick = H("div", { id: "tl-pick" });
    wrap.append(plot, side);
    sec.append(H("h2", { text: "Timeline" }), bar, wrap, pick);
    if (v.pickNode) pick.append(v.pickNode); // what was chosen stays across re-renders

    // Fetch the subagents' audits (each once per version) and the
    // re-derivation (once per audit length); redraw when they come.
    const kids = (d.children || []).slice(0, MAX_KIDS);
    const redraw = () => draw();
    for (const k of kids) {
      const have = v.kids.get(k.id);
      if (have && (have.ver === k.ver || have.at > Date.now() - 2000)) continue; // at most every 2 s
      v.kids.set(k.id, { ver: k.ver, at: Date.now(), items: have ? have.items : [] });
      getJSON("/v1/sessions/" + encodeURIComponent(k.id) + "/audit")
        .then((a) => { v.kids.set(k.id, { ver: k.ver, at: Date.now(), items: a.data.items || [] }); redraw(); })
        .catch(() => {});
    }
    // A live session re-renders its page at each event: its
    // re-derivation (a fold of all its records) is asked again at most
    // every 10 s, and only when its audit grew.
    const rkey = String(items.length);
    if (v.rederiveKey !== rkey && !(v.rederiveAt > Date.now() - 10000)) {
      v.rederiveKey = rkey;
      v.rederiveAt = Date.now();
      getJSON("/v1/sessions/" + encodeURIComponent(s.id) + "/rederive")
        .then((r) => { v.rederive = r.data; redraw(); })
        .catch(() => {});
    }

    let axis = [], pos = null, svgEl = null, geo = null;

    function build() {
      const seqs = new Set(items.map((it) => it.seq));
      for (const k of kids) for (const it of (v.kids.get(k.id) || { items: [] }).items) seqs.add(it.seq);
      axis = [...seqs].sort((a, b) => a - b);
      const index = new Map(axis.map((q, i) => [q, i]));
      pos = (q) => {
        if (index.has(q)) return index.get(q);
        let lo = 0, hi = axis.length; // first axis seq > q
        while (lo < hi) { const m = (lo + hi) >> 1; if (axis[m] <= q) lo = m + 1; else hi = m; }
        return lo - 0.5;
      };
      if (v.fit || v.hi < 0) { v.lo = 0; v.hi = Math.max(axis.length - 1, 0); }
      v.hi = Math.min(v.hi, Math.max(axis.length - 1, 0));
      v.lo = Math.max(0, Math.min(v.lo, v.hi));
      // The cursor keeps its event as the axis grows (a subagent's audit
      // arriving, a live event); at the last event it follows the end.
      v.cursor = v.follow || !v.cursorSeq ? axis.length - 1 : Math.max(0, Math.min(axis.length - 1, Math.round(pos(v.cursorSeq))));
    }

    function draw() {
      build();
      const end = axis.length - 0.5;
      const lanes = lanesOf(items, pos, end, true);
      for (const k of kids) {
        const ki = (v.kids.get(k.id) || { items: [] }).items;
        const l = lanesOf(ki, pos, end, false)[0];
        l.name = "↳ " + (k.agent_type || k.id); l.kind = "subagent"; l.id = k.id;
        lanes.push(l);
      }
      const rd = v.rederive;
      const div = rd && rd.first ? rd.first : null;
      if (div) lanes.push({ name: "re-derived", kind: "divergence", marks: [{ x0: pos(div.obs_seq), x1: pos(div.obs_seq), seq: div.obs_seq, kind: "divergence", label: "diverges", title: "today's reducer decides observation #" + div.obs_seq + " differently (" + rd.diverged + " of " + rd.observations + " observations differ): click to compare" }] });
      const width = Math.max(480, plot.clientWidth || 900);
      const height = AXIS + lanes.length * LANE + 6;
      const span = Math.max(1, v.hi - v.lo + 1);
      const plotW = width - LABEL - 8;
      const px = (x) => LABEL + ((x - v.lo + 0.5) / span) * plotW;
      const idx = (clientX) => {
        const r = svgEl.getBoundingClientRect();
        return Math.round(((clientX - r.left - LABEL) / plotW) * span - 0.5 + v.lo);
      };
      geo = { px, idx, plotW, span };
      svgEl = S("svg", { id: "tl-svg", width, height, viewBox: "0 0 " + width + " " + height, tabindex: "0", role: "img", "aria-label": "session timeline: " + axis.length + " events" });
      const defs = S("defs");
      const clip = S("clipPath", { id: "tl-clip" });
      clip.append(S("rect", { x: LABEL, y: 0, width: plotW + 2, height }));
      defs.append(clip);
      svgEl.append(defs);
      const strip = S("rect", { class: "tl-strip", id: "tl-strip", x: LABEL, y: 0, width: plotW, height: AXIS - 4 });
      strip.append(S("title", {}, "drag to move the cursor"));
      svgEl.append(strip);
      // Ticks: a few sequences along the strip.
      const ticks = S("g", { class: "tl-ticks" });
      const every = Math.max(1, Math.ceil(span / Math.max(2, Math.floor(plotW / 90))));
      for (let i = Math.ceil(v.lo / every) * every; i <= v.hi; i += every) {
        if (i >= axis.length) break;
        ticks.append(S("text", { x: px(i), y: 15, "text-anchor": "middle" }, "#" + axis[i]));
      }
      svgEl.append(ticks);
      lanes.forEach((lane, li) => {
        const y = AXIS + li * LANE;
        const g = S("g", { class: "tl-lane " + lane.kind, "data-lane": lane.kind, "data-session": lane.id || s.id, "clip-path": "url(#tl-clip)" });
        const name = S("text", { class: "tl-name", x: 4, y: y + 15 }, lane.name.length > 16 ? lane.name.slice(0, 15) + "…" : lane.name);
        name.append(S("title", {}, lane.name));
        svgEl.append(name);
        g.append(S("line", { class: "tl-rule", x1: LABEL, x2: width, y1: y + LANE - 0.5, y2: y + LANE - 0.5 }));
        for (const p of pack(lane.marks, px)) {
          if (p.b < LABEL - 4 || p.a > width + 4) continue;
          if (p.group.length > 1) {
            const kinds = new Map();
            for (const m of p.group) { const k = m.kind.split(" ")[0]; kinds.set(k, (kinds.get(k) || 0) + 1); }
            const a = S("g", { class: "tl-mark tl-agg", tabindex: "0", "data-seq": p.group[0].seq, "data-count": p.group.length });
            a.append(S("rect", { x: p.a, y: y + 4, width: Math.max(6, p.b - p.a), height: LANE - 8, rx: 2 }));
            if (Math.max(6, p.b - p.a) >= 7 * String(p.group.length).length + 3) a.append(S("text", { x: p.a + 2, y: y + 15 }, String(p.group.length)));
            a.append(S("title", {}, p.group.length + " marks (" + [...kinds].map(([k, n]) => n + " " + k).join(", ") + ") from #" + p.group[0].seq + ": click to zoom in"));
            a.addEventListener("click", () => zoomTo(Math.min(...p.group.map((m) => m.x0)), Math.max(...p.group.map((m) => m.x1 === end ? m.x0 : m.x1))));
            g.append(a);
            continue;
          }
          const m = p.group[0];
          const point = m.x1 === m.x0;
          const a = S("g", { class: "tl-mark " + m.kind + (m.open ? " open" : "") + (point ? " point" : ""), tabindex: "0", "data-seq": m.seq, "data-kind": m.kind.split(" ")[0] });
          if (m.decided) a.setAttribute("data-decided", m.decided);
          if (m.entry) a.setAttribute("data-entry", m.entry);
          if (point) {
            const x = px(m.x0);
            a.append(S("path", { d: "M" + x + " " + (y + 3) + " l5 8 l-5 8 l-5 -8 z" }));
          } else {
            const a0 = Math.max(p.a, LABEL - 2), b0 = Math.min(p.b, width + 2);
            a.append(S("rect", { x: a0, y: y + 4, width: Math.max(2, b0 - a0), height: LANE - 8, rx: 2 }));
            if (b0 - a0 > 40) a.append(S("text", { x: a0 + 3, y: y + 15 }, m.label.length * 6.5 > b0 - a0 - 6 ? m.label.slice(0, Math.max(1, Math.floor((b0 - a0 - 6) / 6.5) - 1)) + "…" : m.label));
          }
          a.append(S("title", {}, m.title + (m.open ? "\nstill open" : "")));
          a.addEventListener("click", (ev) => { ev.stopPropagation(); choose(m, lane); });
          a.addEventListener("keydown", (ev) => { if (ev.key === "Enter") { ev.preventDefault(); choose(m, lane); } });
          g.append(a);
        }
        svgEl.append(g);
      });
      if (div) {
        const x = px(pos(div.obs_seq));
        svgEl.append(S("line", { class: "tl-divline", id: "tl-divline", x1: x, x2: x, y1: AXIS - 4, y2: height }));
      }
      // The scrubber's cursor.
      const cx = px(v.cursor);
      const cur = S("g", { id: "tl-cursor", "data-seq": axis[v.cursor] || 0 });
      cur.append(S("line", { x1: cx, x2: cx, y1: 0, y2: height }));
      cur.append(S("path", { d: "M" + (cx - 6) + " 0 h12 l-6 9 z" }));
      svgEl.append(cur);
      plot.replaceChildren(svgEl);
      const row = v.selected && document.getElementById("audit-" + v.selected);
      if (row) row.classList.add("hl");
      wire();
      showState();
    }

    function zoomTo(a, b) {
      v.fit = false;
      const pad = Math.max(2, Math.round((b - a) * 0.1));
      v.lo = Math.max(0, Math.floor(a) - pad); v.hi = Math.min(axis.length - 1, Math.ceil(b) + pad);
      draw();
    }
    function zoom(f, at) {
      const span = v.hi - v.lo + 1;
      const c = at === undefined ? (v.lo + v.hi) / 2 : at;
      let n = Math.max(5, Math.min(axis.length, Math.round(span * f)));
      v.fit = n >= axis.length;
      let lo = Math.round(c - ((c - v.lo) / span) * n);
      lo = Math.max(0, Math.min(lo, axis.length - n));
      v.lo = lo; v.hi = lo + n - 1;
      draw();
    }

    function wire() {
      let drag = null;
      svgEl.addEventListener("pointerdown", (ev) => {
        const r = svgEl.getBoundingClientRect();
        const y = ev.clientY - r.top, x = ev.clientX - r.left;
        if (x < LABEL) return;
        if (y < AXIS || ev.target.closest("#tl-cursor")) {
          drag = { kind: "cursor" };
          moveCursor(geo.idx(ev.clientX));
        } else if (!ev.target.closest(".tl-mark")) {
          drag = { kind: "pan", x: ev.clientX, lo: v.lo, hi: v.hi };
        } else return;
        svgEl.setPointerCapture(ev.pointerId);
        ev.preventDefault();
      });
      svgEl.addEventListener("pointermove", (ev) => {
        if (!drag) return;
        if (drag.kind === "cursor") moveCursor(geo.idx(ev.clientX));
        else {
          const n = drag.hi - drag.lo;
          let lo = drag.lo - Math.round(((ev.clientX - drag.x) / geo.plotW) * geo.span);
          lo = Math.max(0, Math.min(lo, axis.length - 1 - n));
          if (lo !== v.lo) { v.lo = lo; v.hi = lo + n; v.fit = false; draw(); drag.kind = "pan"; }
        }
      });
      const stop = () => { drag = null; };
      svgEl.addEventListener("pointerup", stop);
      svgEl.addEventListener("pointercancel", stop);
      svgEl.addEventListener("wheel", (ev) => { ev.preventDefault(); zoom(ev.deltaY > 0 ? 1.25 : 0.8, geo.idx(ev.clientX)); }, { passive: false });
      svgEl.addEventListener("keydown", (ev) => {
        if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
          ev.preventDefault(); ev.stopPropagation();
          moveCursor(v.cursor + (ev.key === "ArrowRight" ? 1 : -1) * (ev.shiftKey ? 10 : 1));
        } else if (ev.key === "Home" || ev.key === "End") { ev.preventDefault(); moveCursor(ev.key === "Home" ? 0 : axis.length - 1); }
      });
    }
    zin.addEventListener("click", () => zoom(0.5, v.cursor));
    zout.addEventListener("click", () => zoom(2, v.cursor));
    fit.addEventListener("click", () => { v.fit = true; draw(); });

    function moveCursor(i) {
      i = Math.max(0, Math.min(axis.length - 1, i));
      if (i === v.cursor) return;
      v.cursor = i; v.cursorSeq = axis[i]; v.follow = i === axis.length - 1;
      // Keep the cursor in view.
      if (i < v.lo || i > v.hi) { const n = v.hi - v.lo; v.lo = Math.max(0, Math.min(i - Math.floor(n / 2), axis.length - 1 - n)); v.hi = v.lo + n; v.fit = false; draw(); return; }
      const cx = geo.px(i);
      const cur = svgEl.querySelector("#tl-cursor");
      cur.setAttribute("data-seq", axis[i]);
      cur.querySelector("line").setAttribute("x1", cx); cur.querySelector("line").setAttribute("x2", cx);
      cur.querySelector("path").setAttribute("d", "M" + (cx - 6) + " 0 h12 l-6 9 z");
      showState();
    }

    // showState shows the state as of the cursor's seq: from the cache at
    // once, else fetched after the cursor rests for 120 ms.
    function showState() {
      const seq = axis[v.cursor];
      if (!seq) { side.replaceChildren(H("p", { class: "dim", text: "no events" })); return; }
      const have = v.at.get(seq);
      if (have) { paint(seq, have); return; }
      side.setAttribute("data-loading", String(seq));
      if (!side.firstChild) side.append(H("p", { class: "dim", text: "loading the state as of #" + seq + " …" }));
      clearTimeout(v.timer);
      v.timer = setTimeout(async () => {
        try {
          const r = await getJSON("/v1/sessions/" + encodeURIComponent(s.id) + "/at?seq=" + seq);
          // The JSON as replay prints it, shown escaped as a whole.
          const st = { state: r.data, json: LogText.escLines(JSON.stringify(r.raw, null, 2)) };
          if (v.at.size > 500) v.at.clear();
          v.at.set(seq, st);
          if (axis[v.cursor] === seq) paint(seq, st);
        } catch (e) { if (axis[v.cursor] === seq) paint(seq, { error: e.message }); }
      }, 120);
    }

    function paint(seq, st) {
      side.removeAttribute("data-loading");
      const it = items.find((x) => x.seq === seq);
      const box = H("div", { id: "tl-at", "data-seq": String(seq) });
      box.append(H("h3", { text: "As of #" + seq }));
      if (it) box.append(H("p", { class: "dim", text: it.at + " · " + it.type + (it.activity ? " " + it.activity : "") }));
      if (st.error) {
        box.append(H("p", { text: st.error }));
        side.replaceChildren(box);
        return;
      }
      const json = st.json;
      st = st.state;
      const ss = (st.sessions || [])[0] || {};
      const kv = H("dl", { class: "kv" });
      const add = (k, val) => { if (val !== undefined && val !== null && val !== "") kv.append(H("dt", { text: k }), H("dd", { "data-field": k }, T(String(val)))); };
      add("phase", ss.phase); add("activity", ss.activity); add("waiting on", ss.waiting_on); add("mode", ss.mode);
      add("turns", ss.turns); add("turn open", ss.turn_open ? "yes" : "no"); add("tool calls", ss.tool_calls); add("abandoned", ss.abandoned);
      add("open entries", (ss.entries || []).map((e) => e.activity + " " + e.entry_id).join(", ") || "none");
      add("reviews open", (ss.pending_reviews || []).map((r) => r.id).join(", "));
      add("state hash", st.hash);
      box.append(kv);
      const det = H("details", {}, H("summary", { text: "as `logbook replay --seq " + seq + " --session " + s.id + " --json` prints it" }), H("pre", { id: "tl-at-json", class: "mono" }, document.createTextNode(json)));
      box.append(det);
      side.replaceChildren(box);
    }

    // choose shows a mark's audit entry: the row in the audit table,
    // scrolled to and highlighted, and above it the mark's chain
    // (transition → cause → observed input); for the divergence, both
    // decisions side by side.
    function choose(m, lane) {
      v.selected = m.seq;
      for (const r of document.querySelectorAll("#audit tr.hl")) r.classList.remove("hl");
      if (m.kind === "divergence") { pickDivergence(); return; }
      const own = !lane.id || lane.id === s.id;
      const row = own ? document.getElementById("audit-" + m.seq) : null;
      const it = own ? items.find((x) => x.seq === m.seq) : (v.kids.get(lane.id) || { items: [] }).items.find((x) => x.seq === m.seq);
      const box = H("div", { class: "tl-pick", "data-seq": String(m.seq) });
      box.append(H("h3", { text: (own ? "" : lane.id + ": ") + "#" + m.seq + " " + (it ? it.type : m.kind) }));
      if (it) {
        const chain = H("ol", { class: "chain" });
        // Each text from the log in its own isolated element.
        const sp = (v, pre) => (v ? [pre === undefined ? " " : pre, T(v)] : []);
        chain.append(H("li", {}, "decision: " + it.type, ...(it.from || it.to ? [" ", T(it.from || ""), " → ", T(it.to || "")] : []),
          ...sp(it.activity), ...sp(it.entry), ...sp(it.action, " · "), ...sp(it.detail, " · "), " at " + it.at));
        if (it.cause) chain.append(H("li", {}, "cause: " + it.cause.kind + "/" + it.cause.event, ...(it.cause.detail ? [" (", T(it.cause.detail), ")"] : []), " ref " + it.cause.ref));
        if (it.obs) {
          const li = H("li", { class: "obs" }, "observed input: #" + it.obs.seq + " " + it.obs.type + " " + it.obs.kind + (it.obs.line ? " line " + it.obs.line : "") + " [");
          (it.obs.signals || []).forEach((g, i) => li.append(i ? ", " : "", T(g)));
          li.append("]");
          const facts = tickFacts(it.obs.tick);
          if (facts.length) li.append(H("ul", { class: "tick" }, ...facts.map((f) => H("li", { text: f }))));
          chain.append(li);
        }
        box.append(chain);
      }
      const prev = axis.indexOf(m.seq) - 1;
      if (own && prev >= 0) {
        const b = H("button", { type: "button", id: "tl-before", text: "state just before (#" + axis[prev] + ")" });
        b.addEventListener("click", () => moveCursor(prev));
        box.append(b);
      }
      if (!own) box.append(H("a", { href: "#/s/" + encodeURIComponent(lane.id), text: "open " + lane.id }));
      pick.replaceChildren(box);
      v.pickNode = box;
      if (own) moveCursor(axis.indexOf(m.seq));
      if (row) {
        row.classList.add("hl");
        row.scrollIntoView({ block: "center" });
      }
    }

    function pickDivergence() {
      const rd = v.rederive, dv = rd && rd.first;
      if (!dv) return;
      const box = H("div", { class: "tl-pick", id: "tl-divergence", "data-seq": String(dv.obs_seq) });
      box.append(H("h3", { text: "First divergence: observation #" + dv.obs_seq + " (" + dv.obs.type + "), event " + dv.index }));
      box.append(H("p", { class: "dim", text: rd.diverged + " of " + rd.observations + " observations decided differently by today's reducer" + (dv.refused ? "; today it refuses: " + dv.refused : "") }));
      const col = (name, id, envs) => {
        const c = H("div", { class: "tl-col", id });
        c.append(H("h4", { text: name }));
        const ol = H("ol", { start: "0" });
        (envs || []).forEach((e, i) => ol.append(H("li", { class: i === dv.index ? "differs" : "", text: e.type + " " + JSON.stringify(e.data) + (e.cause ? " cause=" + e.cause.kind + "/" + e.cause.event : "") })));
        if (!(envs || []).length) ol.append(H("li", { class: "dim", text: "nothing" }));
        c.append(ol);
        return c;
      };
      box.append(H("div", { class: "tl-cols" }, col("recorded", "tl-recorded", dv.recorded), col("today", "tl-today", dv.rederived)));
      pick.replaceChildren(box);
      v.pickNode = box;
      const i = Math.ceil(pos(dv.obs_seq));
      if (i < axis.length) moveCursor(i);
    }

    // stateBefore moves the cursor to the event before seq (an audit
    // row's "state just before").
    v.stateBefore = (seq) => {
      if (!axis.length) build();
      const i = axis.indexOf(seq) - 1;
      if (i < 0) return;
      moveCursor(i);
      sec.scrollIntoView({ block: "start" });
    };

    // Drawn once attached, when the plot has its width.
    requestAnimationFrame(draw);
    return sec;
  }

  // stateBefore shows, on session id's timeline, the state just before
  // event seq (the event before it on the timeline's axis).
  function stateBefore(id, seq) {
    const v = views.get(id);
    if (v && v.stateBefore) v.stateBefore(seq);
  }

  window.Timeline = { section, stateBefore };
})();
