// The studio's one modal dialog: a title, a message, optional fields, Cancel and a confirm
// button. Enter submits, Escape cancels (the native <dialog>), focus goes to the first field
// (or the confirm button) and comes back to where it was. An error thrown by the action is
// shown inside the dialog, which stays open.

import { h, replaceChildren } from "./dom.js";

let dialog = null;

function ensure() {
  if (dialog) return dialog;
  dialog = h("dialog", { id: "action-dialog", "aria-labelledby": "action-title" });
  document.body.appendChild(dialog);
  return dialog;
}

/**
 * Ask, then run `action(values)` (values: {fieldName: string}). Resolves to what the action
 * returned, or null when cancelled.
 * options: {title, text, fields: [{name, label, value, multiline, placeholder}], confirm,
 * danger, action}
 */
export function ask({ title, text, fields = [], confirm = "OK", danger = false, action }) {
  const box = ensure();
  const returnFocus = document.activeElement;
  const error = h("p", { class: "error", role: "alert", id: "action-error" });
  const inputs = fields.map((field) => {
    const props = {
      id: `field-${field.name}`, name: field.name, autocomplete: "off", spellcheck: "false",
      placeholder: field.placeholder || null,
    };
    const input = field.multiline
      ? h("textarea", { ...props, rows: String(field.rows || 6) })
      : h("input", { ...props, type: "text" });
    input.value = field.value ?? "";
    return { field, input };
  });
  const cancel = h("button", { type: "button", class: "ghost", id: "action-cancel" }, "Cancel");
  const ok = h("button", { type: "submit", class: danger ? "danger" : "primary", id: "action-confirm" }, confirm);
  const form = h("form", { method: "dialog", id: "action-form" },
    h("h2", { id: "action-title" }, title),
    text ? h("p", { class: "dim", id: "action-text" }, text) : null,
    inputs.map(({ field, input }) => [h("label", { for: input.id }, field.label), input]),
    error,
    h("div", { class: "dialog-actions" }, cancel, ok));
  replaceChildren(box, form);
  return new Promise((resolve) => {
    let settled = false;
    const finish = (value) => {
      if (settled) return;
      settled = true;
      if (box.open) box.close();
      if (returnFocus && returnFocus.isConnected) returnFocus.focus({ preventScroll: true });
      resolve(value);
    };
    cancel.addEventListener("click", () => finish(null));
    box.addEventListener("cancel", () => finish(null), { once: true });
    // Ctrl/Cmd+Enter submits from a textarea (a plain Enter there is a new line).
    form.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const values = Object.fromEntries(inputs.map(({ field, input }) => [field.name, input.value]));
      ok.disabled = true;
      error.textContent = "";
      try {
        finish(action ? ((await action(values)) ?? true) : values);
      } catch (failure) {
        error.textContent = failure && failure.message ? failure.message : String(failure);
        ok.disabled = false;
      }
    });
    box.showModal();
    (inputs[0]?.input || ok).focus();
  });
}
