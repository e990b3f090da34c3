// Text from the log, as the board shows it. Every string the board takes
// from the API (a title, a cwd, a tool's name and input, a reason, an id)
// is data an agent or a person wrote; shown as it is, a right-to-left
// override (U+202E) would reverse the board's own words beside it and
// ESC or BEL would show as blank boxes. LogText.esc shows such characters
// escaped, as the terminal views do (replay.Escape, term.Field): every C0
// control (\t, \n, \r, else \x1b), DEL (\x7f), the C1 controls
// (\u0080–\u009f), U+061C, U+200E, U+200F, the line and paragraph
// separators U+2028 and U+2029, the bidirectional embeddings, overrides
// and isolates (U+202A–U+202E, U+2066–U+2069), and a lone surrogate
// (what invalid UTF-8 would be) as \uXXXX. LogText.clean does it to every
// string of a parsed JSON value; the board's element helpers (el, svg in
// board.js; H, S in timeline.js) do it again to every text they set, so
// a string that did not come through clean is shown escaped too. The
// escaped form holds only printable ASCII: escaping twice changes
// nothing.
"use strict";

(function () {
  const UNSAFE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
  const NAMED = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };

  function one(c) {
    if (NAMED[c]) return NAMED[c];
    const n = c.charCodeAt(0);
    if (n < 0x80) return "\\x" + n.toString(16).padStart(2, "0");
    return "\\u" + n.toString(16).padStart(4, "0");
  }

  // esc returns s with every character above shown escaped; anything
  // that is not a string is turned into one first ("" for null and
  // undefined).
  function esc(s) {
    if (s === null || s === undefined) return "";
    return String(s).replace(UNSAFE, one);
  }

  // escLines is esc for a text of several lines the board itself put
  // together (a tooltip): its own line breaks stay, each line escaped.
  function escLines(s) {
    if (s === null || s === undefined) return "";
    return String(s).split("\n").map(esc).join("\n");
  }

  // clean returns a copy of v, a value parsed from JSON, with every
  // string in it (object keys too) passed through esc.
  function clean(v) {
    if (typeof v === "string") return esc(v);
    if (Array.isArray(v)) return v.map(clean);
    if (v && typeof v === "object") {
      const out = {};
      for (const [k, x] of Object.entries(v)) out[esc(k)] = clean(x);
      return out;
    }
    return v;
  }

  window.LogText = { esc, escLines, clean };
})();
