// The side panels of one session: memory blocks (writable ones editable: replace or append),
// state (keys edited as JSON values, deleted with null), summaries (superseded ones marked)
// and the session's info with its actions.

import { api } from "./api.js";
import { ask } from "./dialogs.js";
import { formatTime, h, prettyJson, replaceChildren } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { sessionActions } from "./studio.js";

/** Fill #panels for `ctx` (see studio.js) with `overlays` already read. */
export async function loadPanels(ctx, overlays, isCurrent) {
  const [blocks, values] = await Promise.all([
    api.blocks(ctx.sessionId).catch((error) => error),
    api.state(ctx.sessionId).catch((error) => error),
  ]);
  if (!isCurrent()) return;
  replaceChildren(document.querySelector("#panels"),
    panel("Blocks", "blocks-panel", renderBlocks(ctx, blocks)),
    panel("State", "state-panel", renderState(ctx, values)),
    panel("Summaries", "summaries-panel", renderCompactions(ctx, overlays)),
    panel("Session", "info-panel", renderInfo(ctx)));
}

function panel(title, id, body) {
  return h("section", { class: "panel", id, "aria-labelledby": `${id}-title` },
    h("h2", { id: `${id}-title` }, title), body);
}

function failed(value) {
  return value instanceof Error ? h("p", { class: "dim" }, `unavailable: ${value.message}`) : null;
}

function renderBlocks(ctx, result) {
  const error = failed(result);
  if (error) return error;
  const blocks = Array.isArray(result) ? result : (result && result.blocks) || [];
  if (!blocks.length) return h("p", { class: "dim" }, "No memory blocks.");
  return h("div", { class: "blocks" }, blocks.map((block) => {
    const tag = block.is_searchable ? "searchable" : block.is_skill ? "loadable" : block.writable ? "writable" : "readonly";
    const usage = block.max_tokens ? Math.min(100, Math.round((100 * (block.tokens || 0)) / block.max_tokens)) : null;
    const label = String(block.label);
    // Only writable blocks get controls; the API refuses the others anyway.
    const appWide = block.scope === "app" && ctx.keyUser;
    const edit = block.writable && !block.is_skill && !block.is_searchable && !appWide
      ? h("div", { class: "block-actions" },
        h("button", { type: "button", class: "ghost small", "data-edit": label, onclick: () => editBlock(ctx, block, "replace") }, "Edit…"),
        h("button", { type: "button", class: "ghost small", "data-append": label, onclick: () => editBlock(ctx, block, "append") }, "Append…"))
      : null;
    return h("details", { class: "block", open: true, "data-block": label },
      h("summary", {},
        h("span", { class: "block-label" }, label),
        h("span", { class: "pill" }, tag),
        block.scope && block.scope !== "session" ? h("span", { class: "pill" }, String(block.scope)) : null),
      block.description ? h("p", { class: "dim" }, String(block.description)) : null,
      usage !== null ? h("div", { class: "meter", title: `${block.tokens}/${block.max_tokens} tokens` },
        h("span", { style: `width:${usage}%` })) : null,
      h("pre", { class: "block-content" }, block.content ? String(block.content) : "(empty)"),
      edit);
  }));
}

function editBlock(ctx, block, mode) {
  const replace = mode === "replace";
  return ask({
    title: replace ? `Edit block “${block.label}”` : `Append to block “${block.label}”`,
    text: block.max_tokens ? `At most ${block.max_tokens} tokens (now ${block.tokens ?? 0}).` : null,
    fields: [{ name: "content", label: replace ? "Content" : "Text to append", value: replace ? String(block.content ?? "") : "", multiline: true }],
    confirm: replace ? "Save" : "Append",
    action: async ({ content }) => {
      const saved = replace
        ? await api.replaceBlock(ctx.sessionId, block.label, content)
        : await api.appendBlock(ctx.sessionId, block.label, content);
      ctx.toast(`Block “${block.label}” saved.`);
      await ctx.refresh({ panelsOnly: true });
      return saved;
    },
  });
}

function stateValues(result) {
  return result && typeof result === "object" && result.state && typeof result.state === "object" &&
    Object.keys(result).length === 1 ? result.state : result || {};
}

function renderState(ctx, result) {
  const error = failed(result);
  if (error) return error;
  const values = stateValues(result);
  const keys = Object.keys(values).sort();
  const add = h("button", { type: "button", class: "ghost small", id: "state-add", onclick: () => editState(ctx, "", undefined) }, "Add a key…");
  if (!keys.length) return [h("p", { class: "dim" }, "No state."), add];
  // app: keys are the whole app's: a key bound to a user may not write them.
  const locked = (key) => Boolean(ctx.keyUser) && key.startsWith("app:");
  return [h("dl", { class: "state" }, keys.map((key) => [
    h("dt", { class: "mono" }, key),
    h("dd", {},
      h("pre", { class: "code" }, prettyJson(values[key])),
      locked(key) ? null : h("span", { class: "state-actions" },
        h("button", { type: "button", class: "link", "data-state-edit": key, onclick: () => editState(ctx, key, values[key]) }, "edit"),
        h("button", { type: "button", class: "link danger-text", "data-state-delete": key, onclick: () => deleteState(ctx, key) }, "delete"))),
  ])), add];
}

function editState(ctx, key, value) {
  return ask({
    title: key ? `Edit state “${key}”` : "Add a state key",
    text: "The value is JSON: 42, true, \"text\", [1, 2], {\"a\": 1}. A key starting with user: is the owner's, app: the app's.",
    fields: [
      { name: "key", label: "Key", value: key },
      { name: "value", label: "Value (JSON)", value: value === undefined ? "" : JSON.stringify(value, null, 2), multiline: true, rows: 4 },
    ],
    confirm: "Save",
    action: async ({ key: name, value: raw }) => {
      const target = name.trim();
      if (!target) throw new Error("The key is empty.");
      if (ctx.keyUser && target.startsWith("app:")) throw new Error("This key is bound to a user: it may not write app: state.");
      let parsed;
      try {
        parsed = JSON.parse(raw);
      } catch {
        throw new Error("The value is not JSON (write a text in quotes: \"like this\").");
      }
      const delta = { [target]: parsed };
      if (key && key !== target) delta[key] = null; // renamed: the old key goes
      const saved = await api.patchState(ctx.sessionId, delta);
      ctx.toast(`State “${target}” saved.`);
      await ctx.refresh({ panelsOnly: true });
      return saved;
    },
  });
}

function deleteState(ctx, key) {
  return ask({
    title: `Delete state “${key}”?`,
    confirm: "Delete",
    danger: true,
    action: async () => {
      await api.patchState(ctx.sessionId, { [key]: null });
      ctx.toast(`State “${key}” deleted.`);
      await ctx.refresh({ panelsOnly: true });
      return true;
    },
  });
}

const short = (id) => (String(id).length > 14 ? `${String(id).slice(0, 12)}…` : String(id));

function renderCompactions(ctx, overlays) {
  if (!overlays.length) return h("p", { class: "dim" }, "No compactions.");
  return h("ol", { class: "compactions" }, overlays.map((overlay) => h("li", {
    class: overlay.superseded ? "superseded" : null, "data-compaction": overlay.id,
  },
  h("button", { type: "button", class: "hit", onclick: () => ctx.jumpToSummary(overlay.id) },
    h("span", { class: "hit-meta dim", title: `${overlay.from} → ${overlay.to}` }, `${formatTime(overlay.createdAt)} · ${short(overlay.from)} → ${short(overlay.to)}`,
      overlay.superseded ? h("span", { class: "pill superseded-pill", title: "A newer summary covers this range" }, "superseded") : null),
    h("span", { class: "hit-text" }, renderMarkdown(overlay.summary.length > 400 ? `${overlay.summary.slice(0, 399)}…` : overlay.summary, "text md compact"))))));
}

function renderInfo(ctx) {
  const info = ctx.info;
  const rows = [
    ["id", info.id], ["name", info.name], ["user", info.user_id], ["app", info.app_name],
    ["forked from", info.parent_session_id], ["model", info.model],
    ["tokens in / out", `${info.input_tokens ?? 0} / ${info.output_tokens ?? 0}`],
    ["cost", info.estimated_cost ? String(info.estimated_cost) : null],
    ["created", formatTime(info.created_at)], ["updated", formatTime(info.updated_at)],
  ].filter(([, value]) => value !== null && value !== undefined && value !== "");
  const metadata = info.metadata && Object.keys(info.metadata).length
    ? h("details", {}, h("summary", {}, "metadata"), h("pre", { class: "code" }, prettyJson(info.metadata))) : null;
  return [h("dl", { class: "info" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", { class: "mono" }, String(v))])),
    metadata, sessionActions(ctx)];
}
