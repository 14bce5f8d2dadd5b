// One message's parts as DOM: text (with ``` code fences), reasoning, tool calls with their input
// and output, files/attachments, sources and anything else as JSON. Text only ever goes in as
// text nodes.

import { api } from "./api.js";
import { formatBytes, h, icon, prettyJson } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { toolName, withAnswer } from "./tree.js";

const ATTACHMENT_KEY = "$threadline.attachment";
const SAFE_LINK = /^(https?:|mailto:)/i;
const IMAGE_DATA_URL = /^data:image\/(png|jpe?g|gif|webp|avif|bmp);/i;

/** A message text (or summary) as markdown: DOM nodes only, raw HTML shown as text. */
export function renderText(text, className = "text md") {
  return renderMarkdown(text, className);
}

function stateLabel(part) {
  switch (part.state) {
    case "output-available": return ["done", "ok"];
    case "output-error": return ["error", "bad"];
    case "output-denied": return ["denied", "bad"];
    case "input-streaming": return ["streaming", "wait"];
    case "input-available": return ["called", "wait"];
    case "approval-requested": return ["needs approval", "wait"];
    default: return [part.state ? String(part.state) : "call", "wait"];
  }
}

function renderTool(part) {
  const [label, tone] = stateLabel(part);
  const body = [];
  if (part.input !== undefined) {
    body.push(h("div", { class: "tool-label" }, "input"), h("pre", { class: "code" }, prettyJson(part.input)));
  }
  if (part.output !== undefined) {
    body.push(h("div", { class: "tool-label" }, "output"), h("pre", { class: "code" }, prettyJson(part.output)));
  }
  if (part.errorText) {
    body.push(h("div", { class: "tool-label" }, "error"), h("pre", { class: "code error" }, String(part.errorText)));
  }
  const call = part.toolCallId ? h("span", { class: "mono dim" }, String(part.toolCallId)) : null;
  return h("details", { class: "tool" },
    h("summary", {},
      icon("tool"),
      h("span", { class: "tool-name" }, toolName(part)),
      h("span", { class: `pill ${tone}` }, label),
      call),
    h("div", { class: "tool-body" }, body));
}

function attachmentRef(value) {
  return value && typeof value === "object" && typeof value[ATTACHMENT_KEY] === "string" ? value : null;
}

function renderFile(part, context) {
  const ref = attachmentRef(part.url);
  const media = String(part.mediaType ?? part.mimeType ?? "file");
  const name = String(part.filename ?? part.name ?? media);
  const size = ref ? formatBytes(ref.bytes) : typeof part.url === "string" && part.url.startsWith("data:")
    ? formatBytes(Math.floor((part.url.length - part.url.indexOf(",") - 1) * 0.75)) : "";
  const chip = h("div", { class: "attachment" },
    icon("file"),
    h("span", { class: "attachment-name" }, name),
    h("span", { class: "dim" }, [media !== name ? media : null, size].filter(Boolean).join(" · ")));
  const isImage = media.startsWith("image/") && media !== "image/svg+xml";
  if (ref && context?.sessionId) {
    const open = h("button", { class: "link", type: "button" }, isImage ? "preview" : "download");
    open.addEventListener("click", async () => {
      open.disabled = true;
      try {
        const blob = await api.attachment(context.sessionId, `sha256:${ref[ATTACHMENT_KEY]}`);
        const objectUrl = URL.createObjectURL(isImage ? blob.slice(0, blob.size, media) : blob);
        if (isImage) chip.after(h("img", { class: "preview", src: objectUrl, alt: name }));
        else h("a", { href: objectUrl, download: name }).click();
        open.remove();
      } catch (error) {
        open.textContent = `unavailable (${error.message})`;
      }
    });
    chip.appendChild(open);
  } else if (typeof part.url === "string") {
    if (isImage && IMAGE_DATA_URL.test(part.url)) {
      return h("figure", { class: "attachment-figure" }, h("img", { class: "preview", src: part.url, alt: name }), chip);
    }
    if (SAFE_LINK.test(part.url)) {
      chip.appendChild(h("a", { class: "link", href: part.url, target: "_blank", rel: "noopener noreferrer" }, "open"));
    }
  }
  return chip;
}

function renderSource(part) {
  const target = String(part.url ?? "");
  const title = String(part.title ?? target);
  return h("div", { class: "source" }, "source: ",
    SAFE_LINK.test(target) ? h("a", { href: target, target: "_blank", rel: "noopener noreferrer" }, title) : title);
}

export function renderPart(part, context) {
  if (!part || typeof part !== "object") return h("pre", { class: "code" }, prettyJson(part));
  const type = typeof part.type === "string" ? part.type : "";
  if (type === "text") return renderText(part.text ?? "");
  if (type === "reasoning") {
    return h("details", { class: "reasoning" }, h("summary", {}, "reasoning"), renderText(part.text ?? "", "text md dim"));
  }
  if (type.startsWith("tool-") || type === "dynamic-tool") {
    // A call answered by a later message is shown with that result (one step).
    const answer = typeof part.toolCallId === "string" ? context?.answers?.get(part.toolCallId) : undefined;
    return renderTool(withAnswer(part, answer?.part));
  }
  if (type === "file") return renderFile(part, context);
  if (type === "source-url" || type === "source-document") return renderSource(part);
  if (type === "step-start") return null;
  return h("details", { class: "tool" }, h("summary", {}, h("span", { class: "tool-name" }, type || "part")),
    h("pre", { class: "code" }, prettyJson(part)));
}

/** Every part of a message (or its plain `content` when it has no parts). */
export function renderParts(message, context) {
  const parts = Array.isArray(message?.parts) ? message.parts : [];
  if (!parts.length && typeof message?.content === "string") return [renderText(message.content)];
  return parts.map((part) => renderPart(part, context)).filter(Boolean);
}
