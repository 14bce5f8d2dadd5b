// "What the model sees" (GET .../context: the frozen system prompt block by block, the
// history window the Runner would send, what falls out, totals against the budget — the
// Runner's own numbers) and the chat box (POST .../turns), shown when the app's profile
// names a model.

import { api } from "./api.js";
import { h, replaceChildren } from "./dom.js";
import { previewText } from "./tree.js";

let profile = null;
// What is typed survives a redraw (a live update redraws the session).
const kept = { draft: "", runs: "", budget: "" };

/** Read the app's profile once (GET /v1/profile); null when there is none or no access. */
export async function loadProfile() {
  try {
    profile = await api.profile();
  } catch {
    profile = null;
  }
  return profile;
}

export function hasModel() {
  const document_ = profile && (profile.profile || profile);
  return Boolean(document_ && document_.model);
}

const number = (n) => (typeof n === "number" && Number.isFinite(n) ? n.toLocaleString("en-US") : "–");

/** The context view of ctx's session, with its runs / max_context_tokens inputs. */
export function contextView(ctx) {
  const runs = h("input", { type: "number", id: "ctx-runs", min: "0", step: "1", inputmode: "numeric", placeholder: "profile default" });
  const budget = h("input", { type: "number", id: "ctx-budget", min: "1", step: "1", inputmode: "numeric", placeholder: "profile default" });
  runs.value = kept.runs;
  budget.value = kept.budget;
  runs.addEventListener("input", () => { kept.runs = runs.value; });
  budget.addEventListener("input", () => { kept.budget = budget.value; });
  const out = h("div", { id: "context-out", "aria-live": "polite" }, h("p", { class: "dim" }, "Loading…"));
  const show = async () => {
    try {
      const result = await api.context(ctx.sessionId, { runs: runs.value, max_context_tokens: budget.value });
      if (!runs.value && result.runs !== null && result.runs !== undefined) runs.placeholder = String(result.runs);
      if (!budget.value && result.max_context_tokens) budget.placeholder = String(result.max_context_tokens);
      replaceChildren(out, renderContext(result, ctx.messageText || (() => "")));
    } catch (error) {
      replaceChildren(out, h("p", { class: "error", role: "alert" },
        error.status === 404 && error.type !== "SessionNotFoundError"
          ? "This server has no context view (GET …/context)." : `Cannot read the context: ${error.message}`));
    }
  };
  const form = h("form", { class: "context-form", id: "context-form", onsubmit: (event) => { event.preventDefault(); show(); } },
    h("label", { for: "ctx-runs" }, "Runs"), runs,
    h("label", { for: "ctx-budget" }, "Max context tokens"), budget,
    h("button", { type: "submit", class: "ghost" }, "Show"));
  show();
  return h("section", { class: "context-view", id: "context-view", "aria-label": "What the model sees" },
    h("p", { class: "dim" }, "What the Runner would send the model for the next turn: the system prompt block by block, the history window, and what falls out of it. Token counts are the profile's token counter."),
    form, out);
}

function renderContext(result, textOf) {
  const totals = result.totals || {};
  const used = totals.total ?? 0;
  const limit = totals.budget;
  const share = limit ? Math.min(100, Math.round((100 * used) / limit)) : null;
  const system = result.system || { blocks: [] };
  const messages = result.messages || [];
  const dropped = result.dropped || [];
  return [
    h("div", { class: "context-totals", id: "context-totals" },
      h("span", {}, "system ", h("strong", { "data-total": "system" }, number(totals.system))),
      totals.input ? h("span", {}, "input ", h("strong", { "data-total": "input" }, number(totals.input))) : null,
      h("span", {}, "history ", h("strong", { "data-total": "history" }, number(totals.history))),
      h("span", {}, "total ", h("strong", { "data-total": "total" }, number(used))),
      h("span", {}, "budget ", h("strong", { "data-total": "budget" }, limit ? number(limit) : "none")),
      share !== null ? h("div", { class: `meter wide${share >= 100 ? " full" : ""}`, title: `${share}% of the budget` }, h("span", { style: `width:${share}%` })) : null),
    h("h2", {}, `System prompt · ${number(system.tokens)} tokens`),
    system.blocks && system.blocks.length
      ? h("ol", { class: "context-blocks" }, system.blocks.map((block) => h("li", { "data-label": String(block.label ?? "") },
        h("details", {},
          h("summary", {}, h("span", { class: "block-label" }, String(block.label ?? "(text)")),
            h("span", { class: "pill" }, `${number(block.tokens)} tokens`)),
          h("pre", { class: "block-content" }, String(block.text ?? ""))))))
      : h("p", { class: "dim" }, "No system prompt."),
    h("h2", {}, `History sent · ${messages.length} message${messages.length === 1 ? "" : "s"}`),
    messages.length
      ? h("ol", { class: "context-messages" }, messages.map((m) => contextRow(m, "sent", textOf)))
      : h("p", { class: "dim" }, "No message is sent."),
    h("h2", {}, `Falls out · ${dropped.length} message${dropped.length === 1 ? "" : "s"}`),
    dropped.length
      ? h("ol", { class: "context-messages dropped" }, dropped.slice(0, 200).map((m) => contextRow(m, "dropped", textOf)),
        dropped.length > 200 ? h("li", { class: "dim" }, `and ${dropped.length - 200} more`) : null)
      : h("p", { class: "dim" }, "Nothing falls out."),
  ];
}

function contextRow(message, kind, textOf) {
  // The API counts messages (id, role, tokens); their words come from the loaded conversation.
  const text = previewText(message, 140) || textOf(String(message.id ?? ""));
  return h("li", { class: `context-row ${kind}`, "data-id": String(message.id ?? "") },
    h("span", { class: `role role-${String(message.role ?? "").replace(/[^a-z]/gi, "")}` }, String(message.role ?? "")),
    h("span", { class: "mono dim" }, String(message.id ?? "")),
    h("span", { class: "context-text" }, text),
    h("span", { class: "pill" }, `${number(message.tokens)} tokens`));
}

/** The chat box (null when the app's profile names no model). */
export function chatBox(ctx) {
  if (!hasModel()) return null;
  const input = h("textarea", { id: "chat-input", rows: "2", placeholder: "Message the model… (Enter sends, Shift+Enter: new line)", "aria-label": "Message" });
  const send = h("button", { type: "submit", class: "primary", id: "chat-send" }, "Send");
  const status = h("p", { class: "dim small", id: "chat-status", role: "status" });
  const form = h("form", { class: "chat", id: "chat-form" }, input, send, status);
  input.value = kept.draft;
  input.addEventListener("input", () => { kept.draft = input.value; });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    send.disabled = true;
    input.disabled = true;
    status.className = "dim small";
    status.textContent = "The model is answering…";
    try {
      const result = await api.turn(ctx.sessionId, text);
      kept.draft = "";
      input.value = "";
      status.textContent = "";
      await ctx.refresh({ jump: result && result.output ? result.output.id : null });
      document.querySelector("#chat-input")?.focus();
    } catch (error) {
      status.className = "error small";
      status.textContent = `The turn failed: ${error.message}`;
      send.disabled = false;
      input.disabled = false;
    }
  });
  return form;
}
