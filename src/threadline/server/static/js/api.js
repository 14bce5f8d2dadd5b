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

async function request(method, path, { query, body, raw } = {}) {
  const headers = { Accept: "application/json" };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url(path, query), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    throw new ApiError(0, "NetworkError", `cannot reach the server (${error.message})`);
  }
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

/** Parse an export body: one JSON object, or JSON Lines (the first record is the session). */
function parseExport(text) {
  const trimmed = text.trim();
  if (!trimmed) return null;
  try {
    return JSON.parse(trimmed);
  } catch {
    const lines = trimmed.split("\n").filter((line) => line.trim());
    return lines.length ? JSON.parse(lines[0]) : null;
  }
}

const first = (object, ...names) => {
  for (const name of names) if (object && object[name] !== undefined) return object[name];
  return undefined;
};

/**
 * A session's whole tree from an export record: {messages: [{id, parentId, message}], headId,
 * overlays: [{id, summary, from, to, createdAt}], blocks, state}. Tolerates both
 * `{message, parent_id}` items and messages carrying their parent.
 */
export function treeFromExport(record) {
  const session = first(record, "session") && Array.isArray(first(record.session, "messages"))
    ? record.session : record;
  const items = first(session, "messages") || [];
  const messages = [];
  for (const item of items) {
    if (!item || typeof item !== "object") continue;
    const message = item.message && typeof item.message === "object" ? item.message : item;
    const parentId = first(item, "parent_id", "parentId") ?? first(message, "parent_id", "parentId") ?? null;
    if (typeof message.id !== "string") continue;
    messages.push({ id: message.id, parentId, message, seq: first(item, "seq") });
  }
  if (messages.some((m) => typeof m.seq === "number")) {
    messages.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  }
  const overlays = (first(session, "compactions", "overlays") || []).map((c) => ({
    id: String(first(c, "id")),
    summary: String(first(c, "summary") ?? ""),
    from: first(c, "from_message_id", "fromMessageId", "from"),
    to: first(c, "to_message_id", "toMessageId", "to"),
    createdAt: String(first(c, "created_at", "createdAt") ?? ""),
  }));
  const headId = first(session, "head_id", "headId") ?? null;
  return { messages, headId, overlays };
}

export const api = {
  listSessions: (query) => request("GET", "sessions", { query }),
  getSession: (id) => request("GET", sessionPath(id)),
  history: (id, query) => request("GET", `${sessionPath(id)}/messages`, { query }),
  branches: (id, messageId) =>
    request("GET", `${sessionPath(id)}/messages/${seg(messageId)}/branches`),
  compactions: (id) => request("GET", `${sessionPath(id)}/compactions`),
  checkout: (id, leafId) => request("PUT", `${sessionPath(id)}/head`, { body: { leaf_id: leafId } }),
  search: (id, q, limit = 20) => request("GET", `${sessionPath(id)}/search`, { query: { q, limit } }),
  searchAll: (q, limit = 30) => request("GET", "search", { query: { q, limit } }),
  blocks: (id) => request("GET", `${sessionPath(id)}/blocks`),
  state: (id) => request("GET", `${sessionPath(id)}/state`),
  async attachment(id, ref) {
    const response = await request("GET", `${sessionPath(id)}/attachments/${seg(ref)}`, { raw: true });
    return response.blob();
  },
  async tree(id) {
    const response = await request("GET", "export", { query: { session_id: id }, raw: true });
    const record = parseExport(await response.text());
    if (!record) throw new ApiError(404, "NotFound", `session ${id} has no export record`);
    return treeFromExport(record);
  },
  /** An EventSource on the session's events (the key goes in the query string). */
  events(id) {
    const key = getKey();
    return new EventSource(url(`${sessionPath(id)}/events`, { access_token: key || undefined }));
  },
};
