// The view of a big session: one root→leaf path (the head's, or a branch's), read a page at a
// time from GET .../path — it opens at the leaf, pages back when the top is scrolled into
// view, and keeps at most MAX_ITEMS cards in the DOM (older or newer ones leave the page and
// come back from memory; an opened summary draws at most MAX_ORIGINALS of its messages).
// Branches show where they fork, a bounded list of buttons that open that branch's own path.
// Overlays apply to the loaded part of the path as in the tree view.

import { api } from "./api.js";
import { renderMessage, renderSummary } from "./conversation.js";
import { h, icon, replaceChildren } from "./dom.js";
import { indexTree, previewText, toolAnswers, visibleOverlays } from "./tree.js";

export const PAGE = 40;
export const MAX_ITEMS = 160; // cards in the DOM at most
const STEP = 40; // cards brought back from memory at a time
const MAX_FORKS = 8; // branch buttons shown under one message
export const MAX_ORIGINALS = 40; // an opened summary's messages drawn at most

/**
 * ctx: studio.js's context, plus messageActions(id, flags) and checkout(id).
 * where: {leafId} (a path's end), {descend} (a branch's first message) or {} (the head).
 */
export function pagedView(ctx, where = {}) {
  const view = {
    nodes: [], // loaded path, root side first: {id, parentId, depth, children, message}
    items: [], // nodes grouped by overlays (summary items hold their originals)
    hasMore: false,
    headId: null,
    leafId: null,
    overlays: [],
    lo: 0,
    hi: 0,
    busy: false,
    expandedSummaries: new Set(),
  };
  const list = h("ol", { class: "thread main paged", role: "group" });
  const top = h("div", { class: "page-edge dim", id: "older-edge" });
  const bottom = h("div", { class: "page-edge dim", id: "newer-edge" });
  const banner = h("div", { class: "branch-banner", hidden: true });
  const root = h("div", { class: "conversation paged-view", role: "tree", "aria-label": "Conversation (paged)" },
    banner, top, list, bottom);
  const scroller = () => document.querySelector("#main");

  const toNode = (n) => ({ id: n.message.id, parentId: n.parent_id, depth: n.depth, children: n.children, message: n.message });

  function regroup() {
    const ids = view.nodes.map((n) => n.id);
    const spans = visibleOverlays(ids, view.overlays);
    const items = [];
    let s = 0;
    for (let i = 0; i < view.nodes.length; i += 1) {
      const node = view.nodes[i];
      const item = { kind: "msg", id: node.id, node, branches: [] };
      if (s < spans.length && spans[s].start === i) {
        items.push({ kind: "summary", overlay: spans[s].overlay, items: [] });
      }
      const last = items[items.length - 1];
      if (s < spans.length && i >= spans[s].start && i <= spans[s].end) {
        last.items.push(item);
        if (i === spans[s].end) s += 1;
      } else items.push(item);
    }
    view.items = items;
    const index = indexTree(view.nodes);
    view.model = {
      headId: view.headId,
      headPathSet: new Set(view.leafId === view.headId ? ids : []),
      headPath: [],
      answers: toolAnswers(index),
      isLeaf: (id) => !(index.byId.get(id)?.children || []).length,
      lines: new Map(),
    };
  }

  function forks(node, nextId) {
    const others = (node.children || []).filter((c) => c !== nextId);
    if (!others.length) return null;
    const shown = others.slice(-MAX_FORKS);
    return h("div", { class: "forks" },
      shown.map((child) => h("div", { class: "branch" },
        h("button", {
          type: "button", class: "branch-toggle", "data-branch": child,
          title: "Open this branch (its own path, down to its leaf)", onclick: () => ctx.openPath({ descend: child }),
        }, h("span", { class: "chevron" }, icon("chevron")),
        h("span", { class: "branch-kind" }, icon("branch"), "branch"),
        h("span", { class: "branch-preview mono" }, child)))),
      others.length > shown.length ? h("p", { class: "dim small" }, `and ${others.length - shown.length} older branches`) : null);
  }

  function renderItem(item, index) {
    const itemView = {
      sessionId: ctx.sessionId, expandedLines: new Set(), expandedSummaries: view.expandedSummaries,
      actions: ctx.messageActions, maxOriginals: MAX_ORIGINALS,
    };
    const nextOf = (msg) => {
      const i = view.nodes.indexOf(msg.node);
      return i >= 0 && i + 1 < view.nodes.length ? view.nodes[i + 1].id : view.leafId === msg.id ? null : undefined;
    };
    if (item.kind === "summary") {
      const li = renderSummary(view.model, item, itemView, null);
      li.dataset.index = String(index);
      return li;
    }
    const li = renderMessage(view.model, item, itemView);
    li.dataset.index = String(index);
    const fork = forks(item.node, nextOf(item));
    if (fork) li.appendChild(fork);
    return li;
  }

  const firstId = (item) => (item ? (item.kind === "summary" ? item.items[0].id : item.id) : null);
  const holds = (item, id) => (item.kind === "summary" ? item.items.some((m) => m.id === id) : item.id === id);

  function paint() {
    replaceChildren(list, view.items.slice(view.lo, view.hi).map((item, i) => renderItem(item, view.lo + i)));
    edges();
  }

  function edges() {
    top.textContent = view.lo > 0 || view.hasMore ? "Loading older messages…" : "The start of the conversation.";
    top.classList.toggle("more", view.lo > 0 || view.hasMore);
    bottom.hidden = view.hi >= view.items.length;
    bottom.textContent = "Newer messages…";
  }

  /** Keep what is on screen in place while cards are added or removed above it. */
  function anchored(change) {
    const box = scroller();
    const anchor = [...list.children].find((el) => el.getBoundingClientRect().bottom > box.getBoundingClientRect().top);
    const before = anchor ? anchor.getBoundingClientRect().top : 0;
    const key = anchor ? anchor.querySelector(".node[data-id]")?.dataset.id || anchor.dataset.id : null;
    change();
    // Drawn again: the same message's new card (or the summary now holding it) is the anchor.
    const now = anchor && anchor.isConnected ? anchor
      : key ? [...list.children].find((el) => el.dataset.id === key || el.querySelector(`[data-id="${CSS.escape(key)}"]`)) : null;
    if (now) box.scrollTop += now.getBoundingClientRect().top - before;
  }

  async function older() {
    if (view.busy) return;
    view.busy = true;
    try {
      if (view.lo === 0 && view.hasMore) {
        const page = await api.path(ctx.sessionId, { before: view.nodes[0].id, limit: PAGE });
        const shownFirst = firstId(view.items[view.lo]);
        const shownLast = firstId(view.items[view.hi - 1]);
        view.nodes = page.nodes.map(toNode).concat(view.nodes);
        view.hasMore = page.has_more;
        regroup();
        // Find the shown window again: an overlay that starts in the new page may now group
        // messages that were shown one by one (then the window is drawn again, in place).
        const lo = view.items.findIndex((item) => holds(item, shownFirst));
        const hi = view.items.findIndex((item) => holds(item, shownLast)) + 1;
        const regrouped = view.items[lo]?.kind !== "msg" || view.items[lo].id !== shownFirst;
        view.lo = Math.max(0, lo);
        view.hi = Math.max(view.lo, hi);
        if (regrouped) anchored(paint);
      }
      if (view.lo > 0) {
        const from = Math.max(0, view.lo - STEP);
        anchored(() => {
          const fresh = view.items.slice(from, view.lo).map((item, i) => renderItem(item, from + i));
          list.prepend(...fresh);
          view.lo = from;
          while (view.hi - view.lo > MAX_ITEMS) { list.lastElementChild.remove(); view.hi -= 1; }
          edges();
        });
      }
    } catch (error) {
      ctx.fail(error, "loading older messages");
    } finally {
      view.busy = false;
    }
  }

  function newer() {
    if (view.busy || view.hi >= view.items.length) return;
    const to = Math.min(view.items.length, view.hi + STEP);
    anchored(() => {
      list.append(...view.items.slice(view.hi, to).map((item, i) => renderItem(item, view.hi + i)));
      view.hi = to;
      while (view.hi - view.lo > MAX_ITEMS) { list.firstElementChild.remove(); view.lo += 1; }
      edges();
    });
  }

  const watcher = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      if (entry.target === top && (view.lo > 0 || view.hasMore)) older();
      if (entry.target === bottom) newer();
    }
  }, { root: null, rootMargin: "300px 0px" });

  /** The first page and the overlays: [page, overlays]. */
  function fetch() {
    const query = { limit: PAGE };
    if (where.descend) query.descend = where.descend;
    else if (where.leafId) query.leaf_id = where.leafId;
    return Promise.all([api.path(ctx.sessionId, query), api.compactions(ctx.sessionId)]);
  }

  async function load(fetched) {
    const [page, overlays] = await (fetched || fetch());
    view.nodes = page.nodes.map(toNode);
    view.hasMore = page.has_more;
    view.headId = page.head_id;
    view.leafId = page.leaf_id;
    view.overlays = overlays;
    regroup();
    view.hi = view.items.length;
    view.lo = Math.max(0, view.hi - MAX_ITEMS);
    const onHead = view.leafId === view.headId;
    banner.hidden = onHead;
    if (!onHead) {
      const leafIsLeaf = view.model.isLeaf(view.leafId);
      replaceChildren(banner, icon("branch"), h("span", {}, leafIsLeaf
        ? "Viewing a branch, not the live conversation."
        : `Viewing the path that ends at ${view.leafId}.`),
        leafIsLeaf ? h("button", { type: "button", class: "checkout", onclick: () => ctx.checkout(view.leafId) }, "Check out this branch") : null,
        h("button", { type: "button", class: "ghost small", onclick: () => ctx.openPath({}) }, "Back to the head"));
    }
    paint();
    return view;
  }

  return {
    element: root,
    view,
    fetch,
    load,
    start() {
      watcher.observe(top);
      watcher.observe(bottom);
    },
    stop() { watcher.disconnect(); },
    /** Whether message `id` is loaded; if so it is put in the DOM. */
    reveal(id) {
      const index = view.items.findIndex((item) => item.id === id || (item.kind === "summary" && item.items.some((m) => m.id === id)));
      if (index < 0) return false;
      const item = view.items[index];
      if (item.kind === "summary") view.expandedSummaries.add(item.overlay.id);
      if (index < view.lo || index >= view.hi) {
        view.lo = Math.max(0, index - STEP);
        view.hi = Math.min(view.items.length, view.lo + MAX_ITEMS);
      }
      paint();
      return true;
    },
    headText() {
      const last = view.nodes[view.nodes.length - 1];
      return last ? previewText(last.message, 60) : "";
    },
  };
}
