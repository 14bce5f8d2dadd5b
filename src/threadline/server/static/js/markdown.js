// A small, safe markdown renderer: message texts and summaries (model output: hostile input)
// become DOM nodes built with h() — text nodes only, never parsed as HTML. Raw HTML in the
// text stays visible as characters; links are kept only for http(s) and mailto URLs.
//
// Blocks: paragraphs, # headings, ``` / ~~~ fenced code, > quotes, - * + and 1. lists, ---
// rules. Inline: `code`, **strong**, *em* / _em_, [label](url), backslash escapes. Anything
// else is text. Long texts (over MAX_MARKDOWN characters) are shown as plain text.

import { h } from "./dom.js";

export const MAX_MARKDOWN = 40_000;
const MAX_DEPTH = 6; // nested quotes / emphasis deeper than this are text
const CLOSER_WINDOW = 2_000; // how far an emphasis opener looks for its closer

const SAFE_SCHEMES = new Set(["http:", "https:", "mailto:"]);

/** The URL when it is absolute http(s) or mailto with no spaces or control characters. */
export function safeUrl(raw) {
  const text = String(raw ?? "").trim();
  if (!text || /[\s\u0000-\u001f\u007f]/.test(text) || !/^(https?:|mailto:)/i.test(text)) return null;
  try {
    return SAFE_SCHEMES.has(new URL(text).protocol) ? text : null;
  } catch {
    return null;
  }
}

/** `text` as markdown, in a <div class="className">. */
export function renderMarkdown(text, className = "text md") {
  const source = String(text ?? "");
  const box = h("div", { class: className });
  if (source.length > MAX_MARKDOWN) {
    box.appendChild(h("p", {}, source));
    return box;
  }
  for (const node of blocks(source.replace(/\r\n?/g, "\n").split("\n"), 0)) box.appendChild(node);
  return box;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const BULLET = /^ {0,3}([-*+])\s+(.*)$/;
const ORDERED = /^ {0,3}(\d{1,9})[.)]\s+(.*)$/;

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    BULLET.test(line) || ORDERED.test(line);
}

function blocks(lines, depth) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    let match = FENCE.exec(line);
    if (match) {
      const fence = match[1];
      const body = [];
      i += 1;
      while (i < lines.length && !(lines[i].trim().startsWith(fence[0].repeat(fence.length)) &&
        /^\s*([`~])\1*\s*$/.test(lines[i]))) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1; // the closing fence (or the end)
      const lang = match[2].trim().split(/\s+/)[0];
      out.push(h("pre", { class: "code" }, h("code", lang ? { "data-lang": lang } : {}, body.join("\n"))));
      continue;
    }
    match = HEADING.exec(line);
    if (match) {
      const level = Math.min(6, match[1].length + 2);
      out.push(h(`h${level}`, { class: "md-heading" }, inline(match[2] || "", depth)));
      i += 1;
      continue;
    }
    if (RULE.test(line)) { out.push(h("hr", {})); i += 1; continue; }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && QUOTE.test(lines[i])) { inner.push(QUOTE.exec(lines[i])[1]); i += 1; }
      out.push(h("blockquote", {}, depth < MAX_DEPTH ? blocks(inner, depth + 1) : inner.join("\n")));
      continue;
    }
    const ordered = ORDERED.test(line);
    if (ordered || BULLET.test(line)) {
      const pattern = ordered ? ORDERED : BULLET;
      const items = [];
      const first = ordered ? Number(ORDERED.exec(line)[1]) : null;
      while (i < lines.length && pattern.test(lines[i])) {
        const item = [pattern.exec(lines[i])[2]];
        i += 1;
        // Indented continuation lines belong to the item.
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !pattern.test(lines[i])) {
          item.push(lines[i].trim());
          i += 1;
        }
        items.push(h("li", {}, inline(item.join("\n"), depth)));
      }
      out.push(h(ordered ? "ol" : "ul", ordered && first !== 1 ? { start: String(first) } : {}, items));
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !(para.length && startsBlock(lines[i]))) {
      para.push(lines[i]);
      i += 1;
    }
    out.push(h("p", {}, inline(para.join("\n"), depth)));
  }
  return out;
}

const PUNCTUATION = /[!-/:-@[-`{-~]/;
const WORD = /[\p{L}\p{N}]/u;

/** Inline markdown of `text` as an array of nodes and strings. */
export function inline(text, depth = 0) {
  const out = [];
  let plain = "";
  const flush = () => { if (plain) { out.push(plain); plain = ""; } };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "\\" && i + 1 < text.length && PUNCTUATION.test(text[i + 1])) {
      plain += text[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      let n = 1;
      while (text[i + n] === "`") n += 1;
      const ticks = "`".repeat(n);
      const end = text.indexOf(ticks, i + n);
      if (end > i + n && text[end + n] !== "`") {
        flush();
        out.push(h("code", {}, text.slice(i + n, end)));
        i = end + n;
        continue;
      }
      plain += ticks;
      i += n;
      continue;
    }
    if (c === "[") {
      const link = /^\[([^\[\]\n]{0,500})\]\(([^()\s]{1,2000})\)/.exec(text.slice(i, i + 2600));
      if (link) {
        const href = safeUrl(link[2]);
        flush();
        if (href) {
          out.push(h("a", { href, target: "_blank", rel: "noopener noreferrer nofollow" },
            depth < MAX_DEPTH ? inline(link[1], depth + 1) : link[1]));
        } else out.push(link[0]); // an unsafe or relative link stays as its text
        i += link[0].length;
        continue;
      }
    }
    if ((c === "*" || c === "_") && depth < MAX_DEPTH) {
      let n = 1;
      while (text[i + n] === c) n += 1;
      const span = n <= 3 ? emphasis(text, i, c, n) : null;
      if (span) {
        flush();
        const inner = inline(text.slice(i + n, span), depth + 1);
        out.push(n === 1 ? h("em", {}, inner) : n === 2 ? h("strong", {}, inner)
          : h("strong", {}, h("em", {}, inner)));
        i = span + n;
        continue;
      }
      plain += c.repeat(n);
      i += n;
      continue;
    }
    plain += c;
    i += 1;
  }
  flush();
  return out;
}

/** Where the closer of the emphasis run of `n` × `c` at `start` is, or null. */
function emphasis(text, start, c, n) {
  const before = text[start - 1];
  const after = text[start + n];
  if (after === undefined || /\s/.test(after)) return null;
  if (c === "_" && before !== undefined && WORD.test(before)) return null; // intraword _
  const run = c.repeat(n);
  const limit = Math.min(text.length, start + n + CLOSER_WINDOW);
  let j = start + n + 1;
  while (j < limit) {
    j = text.indexOf(run, j);
    if (j < 0 || j >= limit) return null;
    const prev = text[j - 1];
    const next = text[j + n];
    if (next === c) { j += n + 1; continue; } // a longer run: not this closer
    const closes = !/\s/.test(prev) && (c === "*" || next === undefined || !WORD.test(next));
    if (closes) return j;
    j += n;
  }
  return null;
}
