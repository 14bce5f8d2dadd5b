// The studio's write actions, each one call of the public /v1 API: per message (check out,
// fork here, rewind to before it, delete it) and per session (rename, compact now, delete).
// Destructive ones ask first; an API error is shown in the dialog (or a toast). Other open
// viewers see every change through their event streams.

import { api } from "./api.js";
import { ask } from "./dialogs.js";
import { h, icon } from "./dom.js";

/**
 * ctx: {sessionId, info, toast(message, tone), fail(error, where), refresh(), open(sessionId)}
 */
export function messageActions(ctx, id, { isLeaf, isHead }) {
  const items = [];
  if (isLeaf && !isHead) {
    items.push(h("button", {
      type: "button", class: "checkout", "data-leaf": id,
      title: "Move the head here: this branch becomes the live conversation",
      onclick: () => checkout(ctx, id),
    }, icon("branch"), "Check out"));
  }
  const menu = h("details", { class: "menu" },
    h("summary", { class: "menu-button", "aria-label": `Actions on message ${id}`, title: "Actions" }, "⋯"),
    h("div", { class: "menu-items", role: "group", "aria-label": "Message actions" },
      h("button", { type: "button", "data-action": "fork", onclick: () => fork(ctx, id) }, "Fork here…"),
      h("button", { type: "button", "data-action": "rewind", onclick: () => rewind(ctx, id) }, "Rewind to before…"),
      h("button", { type: "button", "data-action": "delete", class: "danger-text", onclick: () => deleteMessage(ctx, id) }, "Delete…")));
  // Escape closes an open menu; choosing an item closes it too.
  menu.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && menu.open) {
      event.stopPropagation();
      menu.open = false;
      menu.querySelector("summary").focus();
    }
  });
  menu.addEventListener("click", (event) => { if (event.target.closest(".menu-items button")) menu.open = false; });
  items.push(menu);
  return items;
}

export async function checkout(ctx, leafId) {
  try {
    await api.checkout(ctx.sessionId, leafId);
  } catch (error) {
    ctx.fail(error, "checking out");
    return;
  }
  ctx.toast("Head moved: this branch is now the live conversation.");
  await ctx.refresh({ jump: leafId });
}

function fork(ctx, id) {
  return ask({
    title: "Fork the session here",
    text: `A new session whose history is the path up to message ${id}. This session stays as it is.`,
    fields: [{ name: "name", label: "Name of the new session", value: `${ctx.info?.name || ctx.sessionId} (fork)` }],
    confirm: "Fork",
    action: async ({ name }) => {
      const created = await api.fork(ctx.sessionId, id, name.trim());
      ctx.toast(`Forked into ${created.name || created.id}.`);
      ctx.open(created.id);
      return created;
    },
  });
}

function rewind(ctx, id) {
  return ask({
    title: "Rewind to before this message",
    text: `The head moves to the parent of ${id}, and session-state changes from there on are undone. Nothing is deleted: the messages stay on their branch.`,
    confirm: "Rewind",
    action: async () => {
      const result = await api.rewind(ctx.sessionId, id);
      ctx.toast(result.head_id ? `Rewound: the head is ${result.head_id}.` : "Rewound: the session is empty.");
      await ctx.refresh({ jump: result.head_id });
      return result;
    },
  });
}

function deleteMessage(ctx, id) {
  return ask({
    title: "Delete this message?",
    text: `Message ${id} is deleted for good (its replies are not moved elsewhere).`,
    confirm: "Delete",
    danger: true,
    action: async () => {
      await api.deleteMessage(ctx.sessionId, id);
      ctx.toast(`Message ${id} deleted.`);
      await ctx.refresh({});
      return true;
    },
  });
}

/** The session's own buttons: rename, compact now, fork at the head, delete. */
export function sessionActions(ctx) {
  return h("div", { class: "session-actions", role: "group", "aria-label": "Session actions" },
    h("button", { type: "button", class: "ghost small", id: "rename-session", onclick: () => rename(ctx) }, "Rename…"),
    h("button", { type: "button", class: "ghost small", id: "compact-session", onclick: (e) => compact(ctx, e.currentTarget) }, "Compact now"),
    h("button", { type: "button", class: "ghost small danger-text", id: "delete-session", onclick: () => deleteSession(ctx) }, "Delete session…"));
}

function rename(ctx) {
  return ask({
    title: "Rename the session",
    fields: [{ name: "name", label: "Name", value: ctx.info?.name || "" }],
    confirm: "Rename",
    action: async ({ name }) => {
      const info = await api.rename(ctx.sessionId, name.trim());
      ctx.toast(`Renamed to “${info.name}”.`);
      await ctx.refresh({ list: true });
      return info;
    },
  });
}

async function compact(ctx, button) {
  button.disabled = true;
  try {
    const answer = await api.compact(ctx.sessionId);
    ctx.toast(answer && answer.result
      ? `Compacted ${answer.result.from_message_id} → ${answer.result.to_message_id}.`
      : "Nothing to compact yet.");
    await ctx.refresh({});
  } catch (error) {
    ctx.fail(error, "compacting");
  } finally {
    button.disabled = false;
  }
}

function deleteSession(ctx) {
  return ask({
    title: "Delete this session?",
    text: `Session “${ctx.info?.name || ctx.sessionId}” and everything of it (messages, summaries, session state and blocks) are deleted for good.`,
    confirm: "Delete session",
    danger: true,
    action: async () => {
      await api.deleteSession(ctx.sessionId);
      ctx.toast("Session deleted.");
      ctx.open(null);
      return true;
    },
  });
}
