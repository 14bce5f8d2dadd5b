// Search results as DOM: the hits of a query, each a button with its role, where it is, its
// time and a snippet with the query's words marked (text nodes and <mark> elements only).

import { formatTime, h } from "./dom.js";

/** `text` with the words of `query` marked. */
export function highlight(text, query) {
  const words = query.toLowerCase().split(/\s+/).map((w) => w.replace(/["']/g, "")).filter((w) => w.length > 1);
  if (!words.length) return [text];
  const pattern = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`, "gi");
  return text.split(pattern).map((chunk, i) => (i % 2 ? h("mark", {}, chunk) : chunk));
}

/** The part of `content` around the query's first word, at most `size` characters. */
export function snippet(content, query, size = 180) {
  const text = String(content ?? "").replace(/\s+/g, " ");
  const first = query.toLowerCase().split(/\s+/).filter(Boolean)
    .map((w) => text.toLowerCase().indexOf(w)).filter((i) => i >= 0).sort((a, b) => a - b)[0] ?? 0;
  const start = Math.max(0, first - 50);
  return (start ? "…" : "") + text.slice(start, start + size) + (text.length > start + size ? "…" : "");
}

export function hitsOf(result) {
  if (Array.isArray(result)) return result;
  return (result && (result.hits || result.results)) || [];
}

/**
 * The results box's content. options: {showSession, title, open(hit), where(id) → node|null}
 */
export function hitList(hits, query, { showSession, title, open, where }) {
  const close = h("button", { type: "button", class: "link", onclick: (e) => { e.target.closest(".results").hidden = true; } }, "close");
  return [
    h("div", { class: "results-head" }, h("span", {}, title), showSession ? null : close),
    h("ol", { class: "hits" }, hits.map((hit) => h("li", {},
      h("button", { type: "button", class: "hit", "data-hit": hit.id, onclick: () => open(hit) },
        h("span", { class: "hit-meta" },
          h("span", { class: `role role-${String(hit.role).replace(/[^a-z]/gi, "")}` }, String(hit.role)),
          showSession ? h("span", { class: "mono dim" }, hit.session_id) : where(hit.id),
          h("span", { class: "dim" }, formatTime(hit.created_at))),
        h("span", { class: "hit-text" }, highlight(snippet(hit.content, query), query)))))),
  ];
}
