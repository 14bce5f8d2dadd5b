// The conversation tree of one session as DOM: the head path as the main thread, other branches
// collapsed under the message they fork from, overlays as summary nodes that open to the
// originals. Branch and summary contents are built on first open.

import { formatTime, h, icon, prettyJson } from "./dom.js";
import { renderParts } from "./parts.js";
import { OVERLAY_PREFIX, previewText } from "./tree.js";

/**
 * Render `tree` (from buildTree) into a fresh element.
 * view: {sessionId, expandedLines: Set, expandedSummaries: Set, onCheckout(id)}
 */
export function renderConversation(tree, view) {
  if (!tree.main) {
    return h("div", { class: "empty" }, h("p", {}, "This session has no messages yet."));
  }
  const root = h("div", { class: "conversation", role: "tree", "aria-label": "Conversation tree" });
  root.appendChild(renderLine(tree, tree.lines.get(tree.main), view, true));
  return root;
}

function renderLine(tree, line, view, isMain) {
  const list = h("ol", { class: `thread${isMain ? " main" : ""}${line.hasHead ? " has-head" : ""}`, role: "group" });
  for (const item of line.items) {
    list.appendChild(item.kind === "summary"
      ? renderSummary(tree, item, view, line)
      : renderMessage(tree, item, view, line));
  }
  // Other roots of the tree hang off the main line's end, like branches.
  if (isMain) {
    const others = [...tree.lines.values()].filter((l) => l.parentKey === line.key && !l.forkId);
    if (others.length) list.appendChild(renderForks(tree, others.map((l) => l.key), view, "other root"));
  }
  return list;
}

function onHeadPath(tree, id) {
  return tree.headPathSet ? tree.headPathSet.has(id) : (tree.headPathSet = new Set(tree.headPath)).has(id);
}

export function renderMessage(tree, item, view) {
  const message = item.node.message || {};
  const id = item.id;
  const role = typeof message.role === "string" ? message.role : "message";
  const isHead = id === tree.headId;
  const isLeaf = tree.isLeaf(id);
  const inPath = onHeadPath(tree, id);
  const headerBits = [
    h("span", { class: `role role-${role.replace(/[^a-z]/gi, "")}` }, role),
    h("time", { class: "dim", datetime: typeof message.createdAt === "string" ? message.createdAt : null },
      formatTime(message.createdAt)),
    h("span", { class: "mono dim msg-id", title: id }, id.length > 14 ? `${id.slice(0, 12)}…` : id),
  ];
  if (isHead) headerBits.push(h("span", { class: "pill head-pill", title: "The session's head: new messages go after it" }, icon("head"), "HEAD"));
  const actions = h("span", { class: "actions" });
  if (view.actions) {
    for (const action of view.actions(id, { isLeaf, isHead })) actions.appendChild(action);
  } else if (isLeaf && !isHead) {
    actions.appendChild(h("button", {
      type: "button", class: "checkout", "data-leaf": id,
      title: "Move the head here: this branch becomes the live conversation",
      onclick: () => view.onCheckout(id),
    }, icon("branch"), "Check out"));
  }
  headerBits.push(actions);
  const metadata = message.metadata && typeof message.metadata === "object" && Object.keys(message.metadata).length
    ? h("details", { class: "metadata" }, h("summary", {}, "metadata"), h("pre", { class: "code" }, prettyJson(message.metadata)))
    : null;
  const card = h("article", {
    class: `card card-${role.replace(/[^a-z]/gi, "")}`, tabindex: "-1", "aria-label": `${role} message ${id}`,
  }, h("header", { class: "card-head" }, headerBits),
  h("div", { class: "card-body" }, renderParts(message, { sessionId: view.sessionId, answers: tree.answers?.get(id) })),
  metadata);
  const li = h("li", {
    class: `node${inPath ? " on-path" : ""}${isHead ? " is-head" : ""}${isLeaf ? " is-leaf" : ""}`,
    role: "treeitem", "data-id": id, id: `msg-${id}`, "aria-current": isHead ? "true" : null,
  }, h("span", { class: "dot", "aria-hidden": "true" }), card);
  if (item.branches.length) li.appendChild(renderForks(tree, item.branches, view, "branch"));
  return li;
}

function renderForks(tree, lineKeys, view, noun) {
  const box = h("div", { class: "forks" });
  for (const key of lineKeys) box.appendChild(renderBranch(tree, tree.lines.get(key), view, noun));
  return box;
}

function renderBranch(tree, line, view, noun) {
  const open = view.expandedLines.has(line.key);
  const start = tree.lines && line.items.length ? firstMessage(line) : null;
  const leaf = line.leafId;
  const label = [
    h("span", { class: "branch-kind" }, icon("branch"), noun),
    h("span", { class: "branch-count" }, `${line.size} message${line.size === 1 ? "" : "s"}`),
    h("span", { class: "branch-preview" }, start ? `“${previewText(start.node.message, 70)}”` : ""),
  ];
  const body = h("div", { class: "branch-body", id: `body-${line.key}` });
  const toggle = h("button", {
    type: "button", class: "branch-toggle", "aria-expanded": String(open),
    "aria-controls": body.id, "data-line": line.key, "data-leaf": leaf,
  }, h("span", { class: "chevron" }, icon("chevron")), label);
  const wrapper = h("div", { class: `branch${open ? " open" : ""}${line.hasHead ? " has-head" : ""}`, "data-line": line.key }, toggle, body);
  const fill = () => { if (!body.firstChild) body.appendChild(renderLine(tree, line, view, false)); };
  if (open) fill(); else body.hidden = true;
  toggle.addEventListener("click", () => {
    const nowOpen = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(nowOpen));
    wrapper.classList.toggle("open", nowOpen);
    if (nowOpen) { view.expandedLines.add(line.key); fill(); } else view.expandedLines.delete(line.key);
    body.hidden = !nowOpen;
  });
  return wrapper;
}

function firstMessage(line) {
  const item = line.items[0];
  return item.kind === "summary" ? item.items[0] : item;
}

export function renderSummary(tree, item, view, line) {
  const overlay = item.overlay;
  const open = view.expandedSummaries.has(overlay.id);
  const count = item.items.length;
  const inPath = item.items.some((m) => onHeadPath(tree, m.id));
  const originals = h("div", { class: "originals", id: `originals-${overlay.id}` });
  const toggle = h("button", {
    type: "button", class: "summary-toggle", "aria-expanded": String(open), "aria-controls": originals.id,
    "data-overlay": overlay.id,
  }, h("span", { class: "chevron" }, icon("chevron")), open ? "Hide the originals" : `Show the ${count} original message${count === 1 ? "" : "s"}`);
  const fill = () => {
    if (originals.firstChild) return;
    const list = h("ol", { class: "thread originals-thread", role: "group" });
    // A bounded view (paged.js) draws at most maxOriginals of them: the DOM stays bounded.
    const shown = view.maxOriginals ? item.items.slice(0, view.maxOriginals) : item.items;
    for (const original of shown) list.appendChild(renderMessage(tree, original, view, line));
    originals.appendChild(list);
    if (shown.length < item.items.length) {
      originals.appendChild(h("p", { class: "dim small more-originals" },
        `and ${item.items.length - shown.length} more original messages (search finds them).`));
    }
  };
  if (open) fill(); else originals.hidden = true;
  toggle.addEventListener("click", () => {
    const nowOpen = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(nowOpen));
    toggle.lastChild.textContent = nowOpen ? "Hide the originals" : `Show the ${count} original message${count === 1 ? "" : "s"}`;
    if (nowOpen) { view.expandedSummaries.add(overlay.id); fill(); } else view.expandedSummaries.delete(overlay.id);
    originals.hidden = !nowOpen;
    li.classList.toggle("open", nowOpen);
  });
  const branchCount = item.items.reduce((n, m) => n + m.branches.length, 0);
  const card = h("article", { class: "card summary-card", tabindex: "-1", "aria-label": `summary of ${count} messages` },
    h("header", { class: "card-head" },
      h("span", { class: "role role-summary" }, icon("layers"), "summary"),
      h("span", { class: "dim" }, `${count} message${count === 1 ? "" : "s"} compacted`),
      branchCount ? h("span", { class: "pill wait" }, `${branchCount} branch${branchCount === 1 ? "" : "es"} inside`) : null,
      h("span", { class: "mono dim msg-id", title: `${OVERLAY_PREFIX}${overlay.id}` }, `${OVERLAY_PREFIX}${overlay.id}`.slice(0, 22))),
    h("div", { class: "card-body" }, renderParts({ parts: [{ type: "text", text: overlay.summary }] })),
    overlay.superseded ? h("p", { class: "superseded-note" }, h("span", { class: "pill superseded-pill" }, "superseded"),
      " a newer summary covers this range") : null,
    h("footer", { class: "card-foot" }, toggle));
  const li = h("li", {
    class: `node summary${inPath ? " on-path" : ""}${open ? " open" : ""}${overlay.superseded ? " superseded" : ""}`, role: "treeitem",
    "data-overlay": overlay.id, id: `summary-${overlay.id}`,
  }, h("span", { class: "dot", "aria-hidden": "true" }), card, originals);
  return li;
}
