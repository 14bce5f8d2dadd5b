// The viewer's shell: the key, the session list, routing (#/s/<session>[/m/<message>]), search,
// the side panels and live updates.

import { api, ApiError, forgetKey, getKey, setKey } from "./api.js";
import { chatBox, contextView, loadProfile } from "./context.js";
import { renderConversation } from "./conversation.js";
import { hitList, hitsOf } from "./search.js";
import { clear, formatTime, h, icon, replaceChildren } from "./dom.js";
import { pagedView } from "./paged.js";
import { loadPanels } from "./panels.js";
import { checkout, messageActions } from "./studio.js";
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
  const match = /^#\/s\/([^/]+)(?:\/m\/([^/]+)|\/(context))?/.exec(location.hash);
  if (!match) return { sessionId: null, messageId: null, tab: "conversation" };
  return {
    sessionId: decodeURIComponent(match[1]),
    messageId: match[2] ? decodeURIComponent(match[2]) : null,
    tab: match[3] ? "context" : "conversation",
  };
}

async function route() {
  const { sessionId, messageId, tab } = parseHash();
  if (!sessionId) {
    closeSession();
    showWelcome();
    return;
  }
  if (!state.current || state.current.id !== sessionId) await openSession(sessionId, tab);
  else if (state.current.tab !== tab) { state.current.tab = tab; renderSession(); }
  if (messageId && state.current && state.current.id === sessionId) jumpTo(messageId);
}

function showWelcome() {
  replaceChildren($("#main"), h("div", { class: "welcome" },
    h("h1", {}, "Conversations as trees"),
    h("p", { class: "dim" }, "Pick a session on the left, or search every session above. The head path is the live conversation; other branches fold under the message they fork from, and summaries open to the messages they replace.")));
  clear($("#panels"));
}

// ------------------------------------------------------------------------------ one session

// Sessions with more messages than this open paged at their head (paged.js); smaller ones
// are read whole and drawn as a tree.
const TREE_LIMIT = 2000;

function closeSession() {
  if (state.current && state.current.events) state.current.events.close();
  if (state.current && state.current.paged) state.current.paged.stop();
  if ($("#activity")) showActivity(false);
  state.current = null;
  setLive("off");
}

/** What the studio's actions need to know about the open session. */
function contextOf(current) {
  const ctx = {
    sessionId: current.id,
    get info() { return current.info; },
    // A key bound to a user may not write app-wide blocks or app: state: no controls for them.
    get keyUser() { return state.key ? state.key.user : null; },
    toast,
    fail: handleError,
    open: (sessionId) => { location.hash = sessionId ? sessionHash(sessionId) : "#/"; loadSessions(); },
    refresh: (options) => refresh(current, options || {}),
    jumpToSummary,
    checkout: (leafId) => checkout(ctx, leafId),
    messageText: (id) => messageText(current, id),
    openPath: (where) => { current.where = where; reloadSession(); },
  };
  ctx.messageActions = (id, flags) => messageActions(ctx, id, flags);
  return ctx;
}

async function openSession(sessionId, tab = "conversation") {
  closeSession();
  const current = {
    id: sessionId, info: null, tree: null, expandedLines: new Set(), expandedSummaries: new Set(), events: null,
    tab, where: {}, paged: null,
  };
  current.ctx = contextOf(current);
  state.current = current;
  renderSessionList();
  replaceChildren($("#main"), h("p", { class: "dim loading" }, "Loading…"));
  await reloadSession({ scrollToHead: true });
  subscribe(sessionId);
}

async function refresh(current, { jump, list, panelsOnly }) {
  if (state.current !== current) return;
  if (list) loadSessions();
  if (panelsOnly) {
    current.info = await api.getSession(current.id).catch(() => current.info);
    await state.keyReady;
    loadPanels(current.ctx, current.overlays || [], () => state.current === current);
    return;
  }
  await reloadSession({});
  if (jump) jumpTo(jump);
}

async function reloadSession({ scrollToHead } = {}) {
  const current = state.current;
  if (!current) return;
  try {
    // Opening: the first page of the path is asked for with the session (one round trip
    // less for a big session; a small one just does not use it).
    const early = scrollToHead ? pagedView(current.ctx, current.where) : null;
    const first = early ? early.fetch() : null;
    if (first) first.catch(() => {});
    const info = await api.getSession(current.id);
    if (state.current !== current) return;
    current.info = info;
    if ((info.message_count ?? 0) > TREE_LIMIT) {
      if (current.paged) current.paged.stop();
      const paged = early || pagedView(current.ctx, current.where);
      await paged.load(first);
      if (state.current !== current) return;
      current.paged = paged;
      current.tree = null;
      current.overlays = paged.view.overlays;
    } else {
      const tree = await api.tree(current.id);
      if (state.current !== current) return;
      current.raw = tree;
      current.overlays = tree.overlays;
      current.tree = buildTree(tree.messages, tree.headId, tree.overlays);
      current.paged = null;
    }
    const main = $("#main");
    const keep = main.scrollTop;
    const atEnd = main.scrollHeight - main.scrollTop - main.clientHeight < 80;
    renderSession();
    showActivity(false);
    if (current.paged) {
      scrollToEnd();
      current.paged.start();
    } else if (scrollToHead && current.tree.headId && !parseHash().messageId) {
      document.getElementById(`msg-${current.tree.headId}`)?.scrollIntoView({ block: "end" });
    } else main.scrollTop = atEnd ? main.scrollHeight : keep; // at the end: follow new messages
    await state.keyReady; // the panels offer only the writes this key may make
    loadPanels(current.ctx, current.overlays, () => state.current === current);
  } catch (error) {
    if (state.current !== current) return;
    if (error.status === 404) {
      replaceChildren($("#main"), h("div", { class: "welcome" }, h("h1", {}, "Session not found"),
        h("p", { class: "dim" }, `No session “${current.id}” is visible with this key.`)));
      clear($("#panels"));
      return;
    }
    handleError(error, "loading the session");
  }
}

function nearEnd() {
  const main = $("#main");
  return main.scrollHeight - main.scrollTop - main.clientHeight < 120;
}

function showActivity(on) {
  let button = $("#activity");
  if (!button) {
    button = h("button", { type: "button", id: "activity", class: "activity primary", hidden: true,
      onclick: () => { showActivity(false); reloadSession(); } }, "New activity · show the latest");
    document.body.appendChild(button);
  }
  button.hidden = !on;
}

function scrollToEnd() {
  const main = $("#main");
  main.scrollTop = main.scrollHeight;
}

function tabs(current) {
  const link = (tab, label) => h("a", {
    class: `tab${current.tab === tab ? " active" : ""}`, id: `tab-${tab}`,
    href: tab === "context" ? `${sessionHash(current.id)}/context` : sessionHash(current.id),
    "aria-current": current.tab === tab ? "page" : null,
  }, label);
  return h("nav", { class: "tabs", "aria-label": "Session views" },
    link("conversation", "Conversation"), link("context", "What the model sees"));
}

function renderSession() {
  const current = state.current;
  if (!current || !current.info || !(current.tree || current.paged)) return; // not loaded yet
  const { info, tree, paged } = current;
  const main = $("#main");
  main.classList.toggle("paged-main", Boolean(paged));
  // A redraw (a live update) keeps the search box's text, its results and the focus.
  const oldQuery = $("#session-q");
  const typed = oldQuery ? { value: oldQuery.value, focused: document.activeElement === oldQuery } : null;
  const oldResults = $("#session-results");
  const results = oldResults || h("div", { id: "session-results", class: "results", hidden: true });
  const headId = tree ? tree.headId : paged.view.headId;
  const headText = tree ? (headId ? previewText(findNode(tree, headId), 60) : "") : paged.headText();
  const stats = tree
    ? [stat(tree.messageCount, "message"), stat([...tree.lines.values()].length, "branch", "branches"),
      stat(tree.overlayCount, "summary", "summaries")]
    : [stat(info.message_count ?? 0, "message"), stat(paged.view.overlays.length, "summary", "summaries"),
      h("span", { class: "pill" }, "paged")];
  const body = current.tab === "context"
    ? contextView(current.ctx)
    : [results, tree
      ? renderConversation(tree, {
        sessionId: current.id,
        expandedLines: current.expandedLines,
        expandedSummaries: current.expandedSummaries,
        actions: current.ctx.messageActions,
      })
      : paged.element, chatBox(current.ctx)];
  replaceChildren(main,
    h("section", { class: "session-head" },
      h("div", { class: "title-row" },
        h("h1", { id: "session-title" }, sessionTitle(info)),
        h("span", { class: "mono dim" }, info.name ? info.id : "")),
      h("p", { class: "stats dim" }, stats,
        info.user_id ? h("span", {}, `user ${info.user_id}`) : null,
        h("span", {}, `updated ${formatTime(info.updated_at)}`)),
      headId ? h("p", { class: "head-line" }, h("span", { class: "pill head-pill" }, icon("head"), "HEAD"),
        h("button", { type: "button", class: "link", id: "goto-head", onclick: () => jumpTo(headId) }, headText || headId)) : null,
      tabs(current),
      current.tab === "context" ? null : h("form", { class: "search-form", role: "search", id: "session-search", onsubmit: searchSession },
        icon("search"),
        h("input", { type: "search", id: "session-q", name: "q", placeholder: "Search this session", "aria-label": "Search this session", autocomplete: "off" }),
        h("button", { type: "submit" }, "Search"))),
    body);
  const query = $("#session-q");
  if (typed && query) {
    query.value = typed.value;
    if (typed.focused) query.focus({ preventScroll: true });
  }
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

/** A preview of message (or summary) `id` from what this view has loaded, else "". */
function messageText(current, id) {
  const overlay = (current.overlays || []).find((o) => `compaction_${o.id}` === id || o.id === id);
  if (overlay) return previewText({ parts: [{ type: "text", text: overlay.summary }] }, 140);
  if (current.tree) return previewText(findNode(current.tree, id), 140);
  const node = current.paged && current.paged.view.nodes.find((n) => n.id === id);
  return node ? previewText(node.message, 140) : "";
}

function stat(n, one, many) {
  return h("span", {}, h("strong", {}, String(n)), ` ${n === 1 ? one : many || `${one}s`}`);
}

/** Open whatever hides message `id` (branches, a summary), scroll to it and flash it. */
function jumpTo(id) {
  const current = state.current;
  if (!current || !id) return;
  if (current.tab !== "conversation") {
    current.tab = "conversation";
    renderSession();
  }
  if (current.paged) {
    if (!current.paged.reveal(id)) {
      // Not loaded: open the path that ends at it.
      current.where = { leafId: id };
      reloadSession().then(() => flash(id));
      return;
    }
    flash(id);
    return;
  }
  if (!current.tree) return;
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
  flash(id);
}

function flash(id) {
  const node = document.getElementById(`msg-${id}`);
  if (!node) return;
  const card = node.querySelector(":scope > .card");
  card.scrollIntoView({ block: "center", behavior: "smooth" });
  card.focus({ preventScroll: true });
  node.classList.remove("flash");
  void node.offsetWidth; // restart the animation
  node.classList.add("flash");
}

function jumpToSummary(overlayId) {
  const node = document.getElementById(`summary-${overlayId}`);
  if (!node) { toast("This summary is not on a shown path.", "bad"); return; }
  const card = node.querySelector(".card");
  card.scrollIntoView({ block: "center", behavior: "smooth" });
  card.focus({ preventScroll: true });
}

// ------------------------------------------------------------------------------ search

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
  return hitList(hits, query, {
    showSession, title, where: whereLabel,
    open: (hit) => {
      if (showSession) location.hash = sessionHash(hit.session_id, hit.id);
      else jumpTo(hit.id);
    },
  });
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
    state.reloadTimer = setTimeout(() => {
      const current = state.current;
      // A big session read far back stays where the reader is: the panels follow, and a
      // button offers the new messages (a reload reopens the view at its end).
      if (current && current.paged && !nearEnd()) {
        refresh(current, { panelsOnly: true });
        showActivity(true);
        return;
      }
      reloadSession();
    }, 150);
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

// GET /v1/events: the session list's changes (created, updated, gone) redraw the list.
function subscribeList() {
  if (typeof EventSource === "undefined" || state.listEvents) return;
  let events;
  try { events = api.listEvents(); } catch { return; }
  state.listEvents = events;
  const onEvent = () => {
    clearTimeout(state.listTimer);
    state.listTimer = setTimeout(() => loadSessions(), 250);
  };
  for (const name of ["created", "updated", "gone", "reset"]) events.addEventListener(name, onEvent);
}

function setLive(mode) {
  const badge = $("#live");
  badge.hidden = mode === "off";
  badge.className = `live ${mode}`;
  badge.title = mode === "on" ? "Live: changes appear as they happen" : "Reconnecting…";
}

// ------------------------------------------------------------------------------ start

function start() {
  state.keyReady = api.whoami().then((key) => { state.key = key; }).catch(() => { state.key = null; });
  loadSessions();
  subscribeList();
  loadProfile().then(() => { if (state.current) renderSession(); });
  route();
}

function init() {
  $("#key-form").addEventListener("submit", submitKey);
  // Escape would close the prompt and leave a viewer that can load nothing: keep it open.
  $("#key-dialog").addEventListener("cancel", (event) => { if (getKey() === null) event.preventDefault(); });
  $("#forget-key").addEventListener("click", () => {
    forgetKey();
    closeSession();
    if (state.listEvents) { state.listEvents.close(); state.listEvents = null; }
    askForKey("");
  });
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
