// The viewer's shell: the key, the session list, routing (#/s/<session>[/m/<message>]), search,
// the side panels and live updates.

import { api, ApiError, forgetKey, getKey, setKey } from "./api.js";
import { renderConversation } from "./conversation.js";
import { clear, formatTime, h, icon, prettyJson, replaceChildren } from "./dom.js";
import { buildTree, previewText, revealPath } from "./tree.js";

const $ = (selector) => document.querySelector(selector);

const state = {
  sessions: [],
  nextCursor: null,
  current: null, // {id, info, tree, expandedLines, expandedSummaries, events}
  reloadTimer: null,
};

// ------------------------------------------------------------------------------ key dialog

function askForKey(message) {
  const dialog = $("#key-dialog");
  $("#key-error").textContent = message || "";
  $("#key-input").value = "";
  if (!dialog.open) dialog.showModal();
  $("#key-input").focus();
}

async function submitKey(event) {
  event.preventDefault();
  const key = $("#key-input").value.trim();
  setKey(key);
  try {
    await api.listSessions({ limit: 1 });
  } catch (error) {
    forgetKey();
    $("#key-error").textContent = error.status === 401
      ? (key ? "This key was not accepted (unknown or revoked)." : "This server needs a key.")
      : error.message;
    return;
  }
  $("#key-dialog").close();
  start();
}

function handleError(error, where) {
  if (error instanceof ApiError && error.status === 401) {
    forgetKey();
    askForKey("The key was refused (revoked?). Enter a key again.");
    return;
  }
  toast(`${where}: ${error.message}`, "bad");
}

function toast(message, tone = "ok") {
  const box = $("#toast");
  box.className = `toast show ${tone}`;
  box.textContent = message;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.className = "toast"; }, 4000);
}

// ------------------------------------------------------------------------------ sessions

async function loadSessions(more = false) {
  try {
    const page = await api.listSessions({ limit: 50, cursor: more ? state.nextCursor : undefined });
    const sessions = Array.isArray(page) ? page : page.sessions || [];
    state.sessions = more ? state.sessions.concat(sessions) : sessions;
    state.nextCursor = Array.isArray(page) ? null : page.next_cursor || null;
    const app = state.sessions.find((s) => s.app_name)?.app_name;
    $("#app-status").textContent = app ? `app ${app}` : "";
    renderSessionList();
  } catch (error) {
    handleError(error, "listing sessions");
  }
}

function sessionTitle(info) { return info.name || info.id; }

function renderSessionList() {
  const filter = $("#session-filter").value.trim().toLowerCase();
  const list = clear($("#session-list"));
  const shown = state.sessions.filter((s) => !filter ||
    [s.id, s.name, s.user_id].some((v) => typeof v === "string" && v.toLowerCase().includes(filter)));
  for (const info of shown) {
    const active = state.current && state.current.id === info.id;
    list.appendChild(h("li", {},
      h("a", {
        class: `session-link${active ? " active" : ""}`, href: sessionHash(info.id),
        "aria-current": active ? "page" : null, "data-session": info.id,
      },
      h("span", { class: "session-name" }, sessionTitle(info)),
      h("span", { class: "session-meta dim" },
        [info.name ? info.id : null, info.user_id ? `user ${info.user_id}` : null,
          `${info.message_count ?? 0} msgs`, formatTime(info.updated_at)].filter(Boolean).join(" · ")))));
  }
  if (!shown.length) {
    list.appendChild(h("li", { class: "dim empty-note" }, state.sessions.length ? "No session matches." : "No sessions yet."));
  }
  $("#more-sessions").hidden = !state.nextCursor;
}

// ------------------------------------------------------------------------------ routing

function sessionHash(sessionId, messageId) {
  return `#/s/${encodeURIComponent(sessionId)}${messageId ? `/m/${encodeURIComponent(messageId)}` : ""}`;
}

function parseHash() {
  const match = /^#\/s\/([^/]+)(?:\/m\/([^/]+))?/.exec(location.hash);
  if (!match) return { sessionId: null, messageId: null };
  return { sessionId: decodeURIComponent(match[1]), messageId: match[2] ? decodeURIComponent(match[2]) : null };
}

async function route() {
  const { sessionId, messageId } = parseHash();
  if (!sessionId) {
    closeSession();
    showWelcome();
    return;
  }
  if (!state.current || state.current.id !== sessionId) await openSession(sessionId);
  if (messageId && state.current && state.current.id === sessionId) jumpTo(messageId);
}

function showWelcome() {
  replaceChildren($("#main"), h("div", { class: "welcome" },
    h("h1", {}, "Conversations as trees"),
    h("p", { class: "dim" }, "Pick a session on the left, or search every session above. The head path is the live conversation; other branches fold under the message they fork from, and summaries open to the messages they replace.")));
  clear($("#panels"));
}

// ------------------------------------------------------------------------------ one session

function closeSession() {
  if (state.current && state.current.events) state.current.events.close();
  state.current = null;
  setLive("off");
}

async function openSession(sessionId) {
  closeSession();
  state.current = {
    id: sessionId, info: null, tree: null, expandedLines: new Set(), expandedSummaries: new Set(), events: null,
  };
  renderSessionList();
  replaceChildren($("#main"), h("p", { class: "dim loading" }, "Loading…"));
  await reloadSession();
  subscribe(sessionId);
}

async function reloadSession() {
  const current = state.current;
  if (!current) return;
  try {
    const [info, tree] = await Promise.all([api.getSession(current.id), api.tree(current.id)]);
    if (state.current !== current) return;
    current.info = info;
    current.raw = tree;
    current.tree = buildTree(tree.messages, tree.headId, tree.overlays);
    renderSession();
    loadPanels(current);
  } catch (error) {
    if (state.current !== current) return;
    if (error.status === 404) {
      replaceChildren($("#main"), h("div", { class: "welcome" }, h("h1", {}, "Session not found"),
        h("p", { class: "dim" }, `No session “${current.id}” is visible with this key.`)));
      return;
    }
    handleError(error, "loading the session");
  }
}

function renderSession() {
  const { info, tree } = state.current;
  const leaves = [...tree.lines.values()].length;
  const main = $("#main");
  const results = h("div", { id: "session-results", class: "results", hidden: true });
  const headText = tree.headId ? previewText(findNode(tree, tree.headId), 60) : "";
  replaceChildren(main,
    h("section", { class: "session-head" },
      h("div", { class: "title-row" },
        h("h1", {}, sessionTitle(info)),
        h("span", { class: "mono dim" }, info.name ? info.id : "")),
      h("p", { class: "stats dim" },
        stat(tree.messageCount, "message"), stat(leaves, "branch", "branches"),
        stat(tree.overlayCount, "summary", "summaries"),
        info.user_id ? h("span", {}, `user ${info.user_id}`) : null,
        h("span", {}, `updated ${formatTime(info.updated_at)}`)),
      tree.headId ? h("p", { class: "head-line" }, h("span", { class: "pill head-pill" }, icon("head"), "HEAD"),
        h("button", { type: "button", class: "link", id: "goto-head", onclick: () => jumpTo(tree.headId) }, headText || tree.headId)) : null,
      h("form", { class: "search-form", role: "search", id: "session-search", onsubmit: searchSession },
        icon("search"),
        h("input", { type: "search", id: "session-q", name: "q", placeholder: "Search this session", "aria-label": "Search this session", autocomplete: "off" }),
        h("button", { type: "submit" }, "Search"))),
    results,
    renderConversation(tree, {
      sessionId: state.current.id,
      expandedLines: state.current.expandedLines,
      expandedSummaries: state.current.expandedSummaries,
      onCheckout: checkout,
    }));
}

function findNode(tree, id) {
  const where = tree.owner.get(id);
  if (!where) return null;
  const line = tree.lines.get(where.line);
  for (const item of line.items) {
    if (item.kind === "msg" && item.id === id) return item.node.message;
    if (item.kind === "summary") for (const inner of item.items) if (inner.id === id) return inner.node.message;
  }
  return null;
}

function stat(n, one, many) {
  return h("span", {}, h("strong", {}, String(n)), ` ${n === 1 ? one : many || `${one}s`}`);
}

async function checkout(leafId) {
  const current = state.current;
  try {
    await api.checkout(current.id, leafId);
  } catch (error) {
    handleError(error, "checking out");
    return;
  }
  await reloadSession();
  toast("Head moved: this branch is now the live conversation.");
  jumpTo(leafId);
}

/** Open whatever hides message `id` (branches, a summary), scroll to it and flash it. */
function jumpTo(id) {
  const current = state.current;
  if (!current || !current.tree) return;
  const reveal = revealPath(current.tree, id);
  if (!reveal) {
    toast(`Message ${id} is not in this session's tree.`, "bad");
    return;
  }
  let changed = false;
  for (const key of reveal.lines) if (!current.expandedLines.has(key)) { current.expandedLines.add(key); changed = true; }
  for (const overlay of reveal.summaries) {
    if (!current.expandedSummaries.has(overlay)) { current.expandedSummaries.add(overlay); changed = true; }
  }
  if (changed) renderSession();
  const node = document.getElementById(`msg-${id}`);
  if (!node) return;
  const card = node.querySelector(":scope > .card");
  card.scrollIntoView({ block: "center", behavior: "smooth" });
  card.focus({ preventScroll: true });
  node.classList.remove("flash");
  void node.offsetWidth; // restart the animation
  node.classList.add("flash");
}

// ------------------------------------------------------------------------------ search

/** `text` with the words of `query` marked (text nodes and <mark> elements only). */
function highlight(text, query) {
  const words = query.toLowerCase().split(/\s+/).map((w) => w.replace(/["']/g, "")).filter((w) => w.length > 1);
  if (!words.length) return [text];
  const pattern = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`, "gi");
  return text.split(pattern).map((chunk, i) => (i % 2 ? h("mark", {}, chunk) : chunk));
}

function snippet(content, query, size = 180) {
  const text = String(content ?? "").replace(/\s+/g, " ");
  const first = query.toLowerCase().split(/\s+/).filter(Boolean)
    .map((w) => text.toLowerCase().indexOf(w)).filter((i) => i >= 0).sort((a, b) => a - b)[0] ?? 0;
  const start = Math.max(0, first - 50);
  return (start ? "…" : "") + text.slice(start, start + size) + (text.length > start + size ? "…" : "");
}

function hitsOf(result) {
  if (Array.isArray(result)) return result;
  return (result && (result.hits || result.results)) || [];
}

/** "in a summary" / "on a branch" for a hit the tree does not show as it stands. */
function whereLabel(id) {
  const tree = state.current && state.current.tree;
  const where = tree && tree.owner.get(id);
  if (!where) return null;
  if (where.line !== tree.main) return h("span", { class: "pill" }, icon("branch"), "on a branch");
  if (where.summary) return h("span", { class: "pill" }, icon("layers"), "in a summary");
  return null;
}

async function searchSession(event) {
  event.preventDefault();
  const query = $("#session-q").value.trim();
  const box = $("#session-results");
  if (!query) { box.hidden = true; return; }
  try {
    const hits = hitsOf(await api.search(state.current.id, query));
    replaceChildren(box, resultsList(hits, query, false,
      `${hits.length} hit${hits.length === 1 ? "" : "s"} for “${query}” in this session`));
    box.hidden = false;
  } catch (error) {
    handleError(error, "searching");
  }
}

async function searchAll(event) {
  event.preventDefault();
  const query = $("#global-q").value.trim();
  if (!query) return;
  try {
    const hits = hitsOf(await api.searchAll(query));
    if (location.hash) history.pushState(null, "", "#/");
    closeSession();
    renderSessionList();
    clear($("#panels"));
    replaceChildren($("#main"), h("section", { class: "session-head" }, h("h1", {}, "Search every session")),
      h("div", { class: "results" }, resultsList(hits, query, true,
        `${hits.length} hit${hits.length === 1 ? "" : "s"} for “${query}”`)));
  } catch (error) {
    handleError(error, "searching");
  }
}

function resultsList(hits, query, showSession, title) {
  const close = h("button", { type: "button", class: "link", onclick: (e) => { e.target.closest(".results").hidden = true; } }, "close");
  return [
    h("div", { class: "results-head" }, h("span", {}, title), showSession ? null : close),
    h("ol", { class: "hits" }, hits.map((hit) => {
      const sessionId = hit.session_id;
      const open = () => {
        if (showSession) location.hash = sessionHash(sessionId, hit.id);
        else jumpTo(hit.id);
      };
      return h("li", {},
        h("button", { type: "button", class: "hit", "data-hit": hit.id, onclick: open },
          h("span", { class: "hit-meta" },
            h("span", { class: `role role-${String(hit.role).replace(/[^a-z]/gi, "")}` }, String(hit.role)),
            showSession ? h("span", { class: "mono dim" }, sessionId) : whereLabel(hit.id),
            h("span", { class: "dim" }, formatTime(hit.created_at))),
          h("span", { class: "hit-text" }, highlight(snippet(hit.content, query), query))));
    })),
  ];
}

// ------------------------------------------------------------------------------ panels

async function loadPanels(current) {
  const [blocks, stateValues, compactions] = await Promise.all([
    api.blocks(current.id).catch((error) => error),
    api.state(current.id).catch((error) => error),
    Promise.resolve(current.raw.overlays),
  ]);
  if (state.current !== current) return;
  const info = current.info;
  replaceChildren($("#panels"),
    panel("Blocks", "blocks-panel", renderBlocks(blocks)),
    panel("State", "state-panel", renderState(stateValues)),
    panel("Summaries", "summaries-panel", renderCompactions(compactions)),
    panel("Session", "info-panel", renderInfo(info)));
}

function panel(title, id, body) {
  return h("section", { class: "panel", id, "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title` }, title), body);
}

function failed(value) {
  return value instanceof Error ? h("p", { class: "dim" }, `unavailable: ${value.message}`) : null;
}

function renderBlocks(result) {
  const error = failed(result);
  if (error) return error;
  const blocks = Array.isArray(result) ? result : (result && result.blocks) || [];
  if (!blocks.length) return h("p", { class: "dim" }, "No memory blocks.");
  return h("div", { class: "blocks" }, blocks.map((block) => {
    const tag = block.is_searchable ? "searchable" : block.is_skill ? "loadable" : block.writable ? "writable" : "readonly";
    const usage = block.max_tokens ? Math.min(100, Math.round((100 * (block.tokens || 0)) / block.max_tokens)) : null;
    return h("details", { class: "block", open: true },
      h("summary", {},
        h("span", { class: "block-label" }, String(block.label)),
        h("span", { class: "pill" }, tag),
        block.scope && block.scope !== "session" ? h("span", { class: "pill" }, String(block.scope)) : null),
      block.description ? h("p", { class: "dim" }, String(block.description)) : null,
      usage !== null ? h("div", { class: "meter", title: `${block.tokens}/${block.max_tokens} tokens` },
        h("span", { style: `width:${usage}%` })) : null,
      h("pre", { class: "block-content" }, block.content ? String(block.content) : "(empty)"));
  }));
}

function renderState(result) {
  const error = failed(result);
  if (error) return error;
  const values = result && typeof result === "object" && result.state && typeof result.state === "object" &&
    Object.keys(result).length === 1 ? result.state : result || {};
  const keys = Object.keys(values).sort();
  if (!keys.length) return h("p", { class: "dim" }, "No state.");
  return h("dl", { class: "state" }, keys.map((key) => [
    h("dt", { class: "mono" }, key),
    h("dd", {}, h("pre", { class: "code" }, prettyJson(values[key]))),
  ]));
}

function renderCompactions(overlays) {
  if (!overlays.length) return h("p", { class: "dim" }, "No compactions.");
  return h("ol", { class: "compactions" }, overlays.map((overlay) => h("li", {},
    h("button", {
      type: "button", class: "hit", onclick: () => jumpToSummary(overlay.id),
    }, h("span", { class: "hit-meta dim" }, `${formatTime(overlay.createdAt)} · ${overlay.from} → ${overlay.to}`),
    h("span", { class: "hit-text" }, previewText({ parts: [{ type: "text", text: overlay.summary }] }, 120))))));
}

function jumpToSummary(overlayId) {
  const node = document.getElementById(`summary-${overlayId}`);
  if (!node) { toast("This summary is not on a shown path.", "bad"); return; }
  const card = node.querySelector(".card");
  card.scrollIntoView({ block: "center", behavior: "smooth" });
  card.focus({ preventScroll: true });
}

function renderInfo(info) {
  const rows = [
    ["id", info.id], ["name", info.name], ["user", info.user_id], ["app", info.app_name],
    ["forked from", info.parent_session_id], ["model", info.model],
    ["tokens in / out", `${info.input_tokens ?? 0} / ${info.output_tokens ?? 0}`],
    ["cost", info.estimated_cost ? String(info.estimated_cost) : null],
    ["created", formatTime(info.created_at)], ["updated", formatTime(info.updated_at)],
  ].filter(([, value]) => value !== null && value !== undefined && value !== "");
  const metadata = info.metadata && Object.keys(info.metadata).length
    ? h("details", {}, h("summary", {}, "metadata"), h("pre", { class: "code" }, prettyJson(info.metadata))) : null;
  return [h("dl", { class: "info" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", { class: "mono" }, String(v))])), metadata];
}

// ------------------------------------------------------------------------------ live updates

// GET .../events sends `message` (appended), `message_updated`, `messages_deleted`, `block`,
// `head` (moved), `compaction` (overlay stored), `renamed`, `state`, and `reset` (resuming
// was not possible): each reloads the session.
// `gone` (deleted) ends the stream; `lagged` ends it too, and EventSource reconnects by itself
// with Last-Event-ID, which replays what was missed (or answers `reset`).
const EVENT_NAMES = [
  "message", "message_updated", "messages_deleted", "head", "compaction", "block", "renamed",
  "state", "reset",
];

function subscribe(sessionId) {
  if (typeof EventSource === "undefined") return;
  let events;
  try { events = api.events(sessionId); } catch { return; }
  state.current.events = events;
  const onEvent = () => {
    clearTimeout(state.reloadTimer);
    state.reloadTimer = setTimeout(() => reloadSession(), 200);
  };
  for (const name of EVENT_NAMES) events.addEventListener(name, onEvent);
  events.addEventListener("gone", () => {
    events.close();
    setLive("off");
    onEvent(); // shows that the session is gone
  });
  events.onopen = () => setLive("on");
  events.onerror = () => setLive(events.readyState === EventSource.CLOSED ? "off" : "wait");
}

function setLive(mode) {
  const badge = $("#live");
  badge.hidden = mode === "off";
  badge.className = `live ${mode}`;
  badge.title = mode === "on" ? "Live: changes appear as they happen" : "Reconnecting…";
}

// ------------------------------------------------------------------------------ start

function start() {
  loadSessions();
  route();
}

function init() {
  $("#key-form").addEventListener("submit", submitKey);
  // Escape would close the prompt and leave a viewer that can load nothing: keep it open.
  $("#key-dialog").addEventListener("cancel", (event) => { if (getKey() === null) event.preventDefault(); });
  $("#forget-key").addEventListener("click", () => { forgetKey(); closeSession(); askForKey(""); });
  $("#session-filter").addEventListener("input", renderSessionList);
  $("#more-sessions").addEventListener("click", () => loadSessions(true));
  $("#global-search").addEventListener("submit", searchAll);
  $("#reload-sessions").addEventListener("click", () => loadSessions());
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", (event) => {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement?.tagName || "");
    if (event.key === "/" && !typing) {
      event.preventDefault();
      ($("#session-q") || $("#global-q")).focus();
    } else if (event.key === "Escape" && typing) {
      document.activeElement.blur();
    }
  });
  if (getKey() === null) askForKey("");
  else start();
}

init();
