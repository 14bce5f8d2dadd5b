// The conversation tree as a view model: pure data, no DOM, no network.
//
// Input: the messages of one session with their parents (oldest first), the head id and the
// compaction overlays. Output: "lines" — a line is a run of messages followed from a start
// message down to a leaf; the main line is the head path, from its root to the head. Every
// message of a line carries the other children it has (each the start of a branch line, shown
// collapsed), and the overlays that apply to a line group its covered messages under a summary
// item that expands to the originals.
//
// Everything is iterative: a chat of thousands of messages nests no deeper than its branches.

export const OVERLAY_PREFIX = "compaction_";

/**
 * @typedef {{id: string, parentId: string|null, message: object}} TreeMessage
 * @typedef {{id: string, summary: string, from: string, to: string, createdAt: string}} Overlay
 */

/** Index messages by id and parent; unknown parents make a message a root. */
export function indexTree(messages) {
  const byId = new Map();
  const children = new Map();
  const roots = [];
  for (const m of messages) {
    if (typeof m.id !== "string" || byId.has(m.id)) continue;
    byId.set(m.id, m);
  }
  for (const m of byId.values()) {
    const parent = m.parentId;
    if (parent != null && byId.has(parent) && parent !== m.id) {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(m.id);
    } else {
      roots.push(m.id);
    }
  }
  return { byId, children, roots };
}

/** Ids from the root to `leafId` (inclusive); [] when unknown. Stops on a (corrupt) cycle. */
export function pathTo(index, leafId) {
  const path = [];
  const seen = new Set();
  let id = leafId;
  while (id != null && index.byId.has(id) && !seen.has(id)) {
    seen.add(id);
    path.push(id);
    const parent = index.byId.get(id).parentId;
    id = parent != null && index.byId.has(parent) ? parent : null;
  }
  return path.reverse();
}

/**
 * The overlays that apply to a path, as {start, end, overlay} in path order — the same rule as
 * the library's `visible_overlays`: from the root, at each position the newest overlay starting
 * there and ending at or after it on this path replaces the range; overlays starting inside a
 * replaced range, or ending off the path, are ignored.
 */
export function visibleOverlays(pathIds, overlays) {
  if (!overlays.length || !pathIds.length) return [];
  const position = new Map();
  pathIds.forEach((id, i) => { if (!position.has(id)) position.set(id, i); });
  const best = new Map();
  for (const overlay of overlays) {
    const start = position.get(overlay.from);
    const end = position.get(overlay.to);
    if (start === undefined || end === undefined || end < start) continue;
    const current = best.get(start);
    if (!current || String(overlay.createdAt) >= String(current.overlay.createdAt)) {
      best.set(start, { end, overlay });
    }
  }
  const spans = [];
  let next = 0;
  for (const start of [...best.keys()].sort((a, b) => a - b)) {
    if (start < next) continue;
    const { end, overlay } = best.get(start);
    spans.push({ start, end, overlay });
    next = end + 1;
  }
  return spans;
}

/** Follow a line from `startId`: the child on `preferred` (a set of ids) if any, else the newest. */
function followLine(index, startId, preferred) {
  const ids = [];
  const seen = new Set();
  let id = startId;
  while (id != null && !seen.has(id)) {
    seen.add(id);
    ids.push(id);
    const kids = index.children.get(id) || [];
    if (!kids.length) break;
    id = kids.find((k) => preferred.has(k)) ?? kids[kids.length - 1];
  }
  return ids;
}

/**
 * Build the view model.
 *
 * Returns {main, lines, owner, headId, headPath, overlayCount}:
 * - a line is {key, startId, parentKey, forkId, items, leafId, size, hasHead};
 * - an item is {kind: "msg", id, node, branches: [lineKey]} or
 *   {kind: "summary", overlay, items: [msg items]};
 * - `owner` maps each message id to {line, summary} (summary: the overlay id covering it in
 *   its line, or null) so a search hit can be revealed.
 */
export function buildTree(messages, headId, overlays = []) {
  const index = indexTree(messages);
  const head = headId != null && index.byId.has(headId) ? headId : null;
  const headPath = head ? pathTo(index, head) : [];
  const onHead = new Set(headPath);
  const lines = new Map();
  const owner = new Map();
  const mainStart = headPath.length ? headPath[0] : index.roots[0];
  const queue = [];
  const addLine = (startId, parentKey, forkId) => {
    const key = `line:${startId}`;
    if (lines.has(key)) return key;
    const line = { key, startId, parentKey, forkId, items: [], leafId: startId, size: 0, hasHead: false };
    lines.set(key, line);
    queue.push(line);
    return key;
  };
  const mainKey = mainStart != null ? addLine(mainStart, null, null) : null;
  for (const root of index.roots) if (root !== mainStart) addLine(root, mainKey, null);

  while (queue.length) {
    const line = queue.shift();
    const ids = followLine(index, line.startId, onHead);
    line.leafId = ids[ids.length - 1];
    line.hasHead = ids.includes(head);
    const spans = visibleOverlays(ids, overlays);
    let s = 0;
    let summary = null;
    ids.forEach((id, i) => {
      const node = index.byId.get(id);
      const kids = index.children.get(id) || [];
      const next = ids[i + 1];
      const item = { kind: "msg", id, node, branches: [] };
      for (const kid of kids) if (kid !== next) item.branches.push(addLine(kid, line.key, id));
      if (s < spans.length && spans[s].start === i) {
        summary = { kind: "summary", overlay: spans[s].overlay, items: [] };
        line.items.push(summary);
      }
      if (summary) {
        summary.items.push(item);
        owner.set(id, { line: line.key, summary: summary.overlay.id });
        if (spans[s].end === i) { summary = null; s += 1; }
      } else {
        line.items.push(item);
        owner.set(id, { line: line.key, summary: null });
      }
    });
  }
  // Sizes (messages in a line and every branch off it), children before parents.
  const order = [...lines.values()];
  const ownSize = new Map(order.map((l) => [l.key, 0]));
  for (const [, where] of owner) ownSize.set(where.line, ownSize.get(where.line) + 1);
  for (let i = order.length - 1; i >= 0; i -= 1) {
    const line = order[i];
    line.size += ownSize.get(line.key);
    const parent = line.parentKey && lines.get(line.parentKey);
    if (parent && line.parentKey !== line.key) parent.size += line.size;
  }
  return {
    main: mainKey,
    lines,
    owner,
    answers: toolAnswers(index),
    headId: head,
    headPath,
    overlayCount: overlays.length,
    messageCount: index.byId.size,
    isLeaf: (id) => !(index.children.get(id) || []).length,
  };
}

/** How many messages up a tool result looks for its call: the library's TOOL_NAME_WINDOW. */
export const TOOL_WINDOW = 200;

function isToolPart(part) {
  return Boolean(part) && typeof part === "object" && typeof part.type === "string" &&
    (part.type.startsWith("tool-") || part.type === "dynamic-tool");
}

function hasOutput(part) {
  return typeof part.state === "string" ? part.state.startsWith("output") : "output" in part || "errorText" in part;
}

/** A tool part holding a result and no call input: what a result message carries. */
function isResultOnly(part) {
  return !("input" in part) && hasOutput(part);
}

/**
 * Tool calls answered by a later message (a result stored on its own, the agent-loop order):
 * call's message id → Map(call id → {part, messageId}) of the result. A result answers the
 * nearest message above it, within TOOL_WINDOW messages, holding a call with its id; the first
 * result found wins. The same pairing as the library's `answers_of`, per branch.
 */
export function toolAnswers(index) {
  const answers = new Map();
  for (const [id, node] of index.byId) {
    const parts = Array.isArray(node.message?.parts) ? node.message.parts : [];
    for (const part of parts) {
      if (!isToolPart(part) || !isResultOnly(part) || typeof part.toolCallId !== "string") continue;
      const seen = new Set();
      let up = node.parentId;
      while (up != null && index.byId.has(up) && seen.size < TOOL_WINDOW && !seen.has(up)) {
        seen.add(up);
        const calls = index.byId.get(up).message?.parts;
        if (Array.isArray(calls) &&
            calls.some((c) => isToolPart(c) && !isResultOnly(c) && c.toolCallId === part.toolCallId)) {
          if (!answers.has(up)) answers.set(up, new Map());
          if (!answers.get(up).has(part.toolCallId)) answers.get(up).set(part.toolCallId, { part, messageId: id });
          break;
        }
        up = index.byId.get(up).parentId;
      }
    }
  }
  return answers;
}

/** A call `part` shown with its answer's state and result: call and result as one step. */
export function withAnswer(part, answer) {
  if (!answer || !isToolPart(part) || hasOutput(part)) return part;
  const step = { ...part, state: answer.state ?? "output-available" };
  if ("output" in answer) step.output = answer.output;
  if ("errorText" in answer) step.errorText = answer.errorText;
  return step;
}

/** What must be opened to show message `id`: the line keys (outermost first) and the overlay. */
export function revealPath(tree, id) {
  const where = tree.owner.get(id);
  if (!where) return null;
  const lineKeys = [];
  let key = where.line;
  const seen = new Set();
  while (key && !seen.has(key)) {
    seen.add(key);
    lineKeys.push(key);
    key = tree.lines.get(key)?.parentKey ?? null;
  }
  lineKeys.reverse();
  // The summaries holding the fork point of each nested line must be open too.
  const summaries = [];
  for (const lineKey of lineKeys) {
    const line = tree.lines.get(lineKey);
    if (line.forkId) {
      const fork = tree.owner.get(line.forkId);
      if (fork && fork.summary) summaries.push(fork.summary);
    }
  }
  if (where.summary) summaries.push(where.summary);
  return { lines: lineKeys.filter((k) => k !== tree.main), summaries };
}

/** Plain text of a message for previews: its text parts, else a description of its parts. */
export function previewText(message, max = 90) {
  const parts = Array.isArray(message?.parts) ? message.parts : [];
  let text = parts
    .filter((p) => p && (p.type === "text" || p.type === "reasoning") && typeof p.text === "string")
    .map((p) => p.text)
    .join(" ");
  if (!text) {
    const tools = parts.filter((p) => p && typeof p.type === "string" &&
      (p.type.startsWith("tool-") || p.type === "dynamic-tool"));
    if (tools.length) text = "tool: " + tools.map(toolName).join(", ");
    else if (parts.some((p) => p && p.type === "file")) text = "attachment";
    else if (typeof message?.content === "string") text = message.content;
  }
  text = text.replace(/\s+/g, " ").trim();
  return text.length > max ? text.slice(0, max - 1) + "…" : text;
}

/** The tool name of a `tool-NAME` or `dynamic-tool` part. */
export function toolName(part) {
  if (part.type === "dynamic-tool") return String(part.toolName ?? "tool");
  return part.type.slice("tool-".length) || "tool";
}
