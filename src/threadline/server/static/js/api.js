// The HTTP API of `threadline serve` (/v1), as the viewer uses it. The key lives in the page's
// session storage only: it is sent as a Bearer header, and as ?access_token= on the event stream
// (EventSource cannot send headers).

const KEY_NAME = "threadline.apiKey";
// The API sits beside the viewer: /ui/js/api.js → /v1/ (also under a path prefix).
export const API_BASE = new URL("../../v1/", import.meta.url);

export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export function getKey() { return sessionStorage.getItem(KEY_NAME); }
export function setKey(key) { sessionStorage.setItem(KEY_NAME, key); }
export function forgetKey() { sessionStorage.removeItem(KEY_NAME); }

const seg = (value) => encodeURIComponent(value);
const sessionPath = (id) => `sessions/${seg(id)}`;

function url(path, query) {
  const target = new URL(path, API_BASE);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") target.searchParams.set(name, value);
  }
  return target;
}

// The commit position of this tab's last write (X-Threadline-Read-After): echoed on later
// requests so a read served by any worker (or replica) sees what this tab wrote.
let readAfter = null;

async function request(method, path, { query, body, raw } = {}) {
  const headers = { Accept: "application/json" };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (readAfter) headers["X-Threadline-Read-After"] = readAfter;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url(path, query), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, "NetworkError", `cannot reach the server (${error.message})`);
  }
  const position = response.headers.get("X-Threadline-Read-After");
  if (position) readAfter = position;
  if (!response.ok) {
    let type = response.statusText || "HTTPError";
    let message = `${method} ${path}: HTTP ${response.status}`;
    try {
      const data = await response.json();
      if (data && data.error) {
        type = String(data.error.type ?? type);
        message = String(data.error.message ?? message);
      }
    } catch { /* not JSON: keep the status line */ }
    throw new ApiError(response.status, type, message);
  }
  if (raw) return response;
  if (response.status === 204) return null;
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

/** Overlays as the tree model takes them. */
function overlaysOf(result) {
  return ((result && result.compactions) || []).map((c) => ({
    id: String(c.id), summary: String(c.summary ?? ""), from: c.from_message_id, to: c.to_message_id,
    createdAt: String(c.created_at ?? ""), superseded: Boolean(c.superseded),
  }));
}

const TREE_PAGE = 1000;

export const api = {
  listSessions: (query) => request("GET", "sessions", { query }),
  getSession: (id) => request("GET", sessionPath(id)),
  history: (id, query) => request("GET", `${sessionPath(id)}/messages`, { query }),
  branches: (id, messageId) =>
    request("GET", `${sessionPath(id)}/messages/${seg(messageId)}/branches`),
  checkout: (id, leafId) => request("PUT", `${sessionPath(id)}/head`, { body: { leaf_id: leafId } }),
  search: (id, q, limit = 20) => request("GET", `${sessionPath(id)}/search`, { query: { q, limit } }),
  searchAll: (q, limit = 30) => request("GET", "search", { query: { q, limit } }),
  blocks: (id) => request("GET", `${sessionPath(id)}/blocks`),
  state: (id) => request("GET", `${sessionPath(id)}/state`),
  async attachment(id, ref) {
    const response = await request("GET", `${sessionPath(id)}/attachments/${seg(ref)}`, { raw: true });
    return response.blob();
  },
  /**
   * A session's whole tree: {messages: [{id, parentId, message}] (oldest first), headId,
   * overlays} — every page of GET .../tree (attachments as references) and the compactions.
   */
  async tree(id) {
    const messages = [];
    let headId = null;
    let after = 0;
    const overlays = request("GET", `${sessionPath(id)}/compactions`);
    overlays.catch(() => {}); // awaited below; this only keeps an early failure from going unhandled
    for (;;) {
      const page = await request("GET", `${sessionPath(id)}/tree`, {
        query: { after_seq: after, limit: TREE_PAGE, attachments: "ref" },
      });
      if (after === 0) headId = page.head_id ?? null;
      for (const node of page.nodes || []) {
        messages.push({ id: node.message.id, parentId: node.parent_id ?? null, message: node.message });
      }
      if (page.next_after_seq === null || page.next_after_seq === undefined) break;
      after = page.next_after_seq;
    }
    return { messages, headId, overlays: overlaysOf(await overlays) };
  },
  /** An EventSource on the session's events (the key goes in the query string). */
  events(id) {
    const key = getKey();
    return new EventSource(url(`${sessionPath(id)}/events`, { access_token: key || undefined }));
  },
  /** An EventSource on the session list's events (created, updated, gone). */
  listEvents() {
    const key = getKey();
    return new EventSource(url("events", { access_token: key || undefined }));
  },

  // ---- the path, a page at a time (big sessions)
  /** {head_id, leaf_id, nodes: [{depth, parent_id, children, message}], has_more} */
  path: (id, query) => request("GET", `${sessionPath(id)}/path`, { query: { attachments: "ref", ...query } }),
  head: (id) => request("GET", `${sessionPath(id)}/head`),
  compactions: async (id) => overlaysOf(await request("GET", `${sessionPath(id)}/compactions`)),

  // ---- writes (the studio)
  replaceBlock: (id, label, content) =>
    request("PUT", `${sessionPath(id)}/blocks/${seg(label)}`, { body: { content } }),
  appendBlock: (id, label, content) =>
    request("POST", `${sessionPath(id)}/blocks/${seg(label)}`, { body: { content } }),
  patchState: (id, delta) => request("PATCH", `${sessionPath(id)}/state`, { body: delta }),
  rename: (id, name) => request("PATCH", sessionPath(id), { body: { name } }),
  fork: (id, atMessageId, name) =>
    request("POST", `${sessionPath(id)}/fork`, { body: { at_message_id: atMessageId, name: name || null } }),
  rewind: (id, beforeMessageId) =>
    request("POST", `${sessionPath(id)}/rewind`, { body: { before_message_id: beforeMessageId } }),
  deleteMessage: (id, messageId) => request("DELETE", `${sessionPath(id)}/messages/${seg(messageId)}`),
  deleteSession: (id) => request("DELETE", sessionPath(id)),
  compact: (id) => request("POST", `${sessionPath(id)}/compact`, { body: {} }),

  // ---- what the model sees, and chat
  context: (id, query) => request("GET", `${sessionPath(id)}/context`, { query }),
  turn: (id, input) => request("POST", `${sessionPath(id)}/turns`, { body: { input } }),
  profile: () => request("GET", "profile"),
  /** {app, user}: what this key reaches (user: the user it is bound to, or null). */
  whoami: () => request("GET", "key"),
};
