// The Chat tab of a text-generation model: a conversation streamed token by token from
// /v1/chat/completions (or a prompt continued by /v1/completions when the model has no chat template).

import { postEventStream } from "./api.js";
import { errorBox, formatNumber, h, labelled, replace, uniqueId } from "./dom.js";

/** The number in input `el`, or undefined when it is empty. */
function numberOf(el) {
  return el.value.trim() === "" ? undefined : Number(el.value);
}

function numberInput(id, { value = "", step = "any", min, max, placeholder } = {}) {
  return h("input", { type: "number", id: uniqueId(id), value, step, min, max, placeholder, dataset: { setting: id } });
}

/** The settings form: max tokens, temperature, top_p, seed and (chat only) the system prompt. */
function settingsForm(generation, chat) {
  const fields = {
    // the server's default when empty: up to the context length for chat, OpenAI's 16 for completions
    max_tokens: numberInput("max_tokens", { step: 1, min: 1, max: generation.context_length, placeholder: chat ? `up to ${generation.context_length}` : "16" }),
    temperature: numberInput("temperature", { value: 0.7, step: 0.1, min: 0, max: 2 }),
    top_p: numberInput("top_p", { value: 1, step: 0.05, min: 0, max: 1 }),
    seed: numberInput("seed", { step: 1, placeholder: "random" }),
  };
  const system = chat ? h("textarea", { id: uniqueId("system"), rows: 3, placeholder: "You are a helpful assistant.", dataset: { setting: "system" } }) : null;
  const element = h(
    "fieldset.chat-settings",
    null,
    h("legend", null, "Settings"),
    h(
      "div.field-grid",
      null,
      labelled("Max tokens", fields.max_tokens),
      labelled("Temperature", fields.temperature),
      labelled("Top p", fields.top_p),
      labelled("Seed", fields.seed),
    ),
    system ? labelled("System prompt", system) : null,
    h("p.hint", null, "Temperature 0 is greedy: the same prompt gives the same answer."),
  );
  function sampling() {
    const values = {};
    for (const [key, el] of Object.entries(fields)) {
      const value = numberOf(el);
      if (value !== undefined) values[key] = value;
    }
    return values;
  }
  return { element, sampling, system: () => (system ? system.value.trim() : "") };
}

/** "12 prompt + 30 completion tokens · 41.2 tokens/s · finished: length" */
function usageLine(usage, seconds, finish) {
  const rate = usage.completion_tokens / Math.max(seconds, 1e-3);
  return h(
    "p.chat-usage",
    {
      dataset: { testid: "chat-usage", promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens },
    },
    `${usage.prompt_tokens} prompt + ${usage.completion_tokens} completion tokens · ${formatNumber(rate)} tokens/s`,
    finish ? ` · finished: ${finish}` : "",
  );
}

function bubble(role, text) {
  const body = h("div.bubble-text", null, text);
  const who = { user: "You", assistant: "Model", system: "System", prompt: "Prompt", completion: "Continuation" }[role];
  return { element: h(`div.bubble.bubble-${role}`, { dataset: { role } }, h("div.bubble-who", null, who), body), body };
}

/**
 * The Chat tab of `model` (its config's `mininn.generation` says what it takes).
 * @param {{name: string, config: any}} model
 * @returns {HTMLElement}
 */
export function chatView(model) {
  const generation = model.config.mininn.generation;
  if (!generation.tokenizer) {
    return h(
      "div.chat",
      { dataset: { testid: "chat", mode: "ids" } },
      h(
        "p.note",
        { dataset: { testid: "chat-ids-only" } },
        `${model.name} has no tokenizer: it takes token ids only, so there is no text to chat with. `,
        "Send ids with the Try it tab (input_ids gives the next-token logits), or to POST /v1/completions with ",
        h("code", null, `{"model": "${model.name}", "prompt": [1, 2, 3]}`),
        ".",
      ),
    );
  }
  const chat = generation.chat_template;
  const settings = settingsForm(generation, chat);
  const log = h("div.chat-log", { role: "log", "aria-live": "polite", "aria-label": "Conversation", dataset: { testid: "chat-log" } });
  const input = h("textarea", { id: uniqueId("chat-input"), rows: 3, placeholder: chat ? "Say something…" : "A prompt to continue…" });
  const send = h("button.primary", { type: "submit" }, "Send");
  const stop = h("button", { type: "button", disabled: true }, "Stop");
  const clear = h("button", { type: "button" }, "Clear");
  const history = [];
  let controller = null;

  function busy(on) {
    send.disabled = on;
    stop.disabled = !on;
    clear.disabled = on;
  }

  async function run() {
    const text = input.value;
    if (!text.trim() || controller) return;
    input.value = "";
    const request = { model: model.name, stream: true, stream_options: { include_usage: true }, ...settings.sampling() };
    let path;
    if (chat) {
      history.push({ role: "user", content: text });
      const system = settings.system();
      request.messages = [...(system ? [{ role: "system", content: system }] : []), ...history];
      path = "/v1/chat/completions";
    } else {
      request.prompt = text;
      path = "/v1/completions";
    }
    log.append(bubble(chat ? "user" : "prompt", text).element);
    const reply = bubble(chat ? "assistant" : "completion", "");
    reply.element.dataset.status = "streaming";
    reply.element.setAttribute("aria-busy", "true");
    log.append(reply.element);
    log.scrollTop = log.scrollHeight;
    controller = new AbortController();
    busy(true);
    const started = performance.now();
    let answer = "";
    let usage = null;
    let finish = null;
    try {
      await postEventStream(path, request, {
        signal: controller.signal,
        onEvent(event) {
          if (event.usage) usage = event.usage;
          const choice = event.choices && event.choices[0];
          if (!choice) return;
          const piece = chat ? choice.delta && choice.delta.content : choice.text;
          if (piece) {
            answer += piece;
            reply.body.append(piece);
            log.scrollTop = log.scrollHeight;
          }
          if (choice.finish_reason) finish = choice.finish_reason;
        },
      });
      reply.element.dataset.status = "done";
      if (usage) reply.element.append(usageLine(usage, (performance.now() - started) / 1000, finish));
    } catch (error) {
      if (error.name === "AbortError") {
        reply.element.dataset.status = "stopped";
        reply.element.append(h("p.chat-usage", null, "Stopped: the server cancelled the generation."));
      } else {
        reply.element.dataset.status = "error";
        reply.element.append(errorBox(error, "The model failed"));
      }
    } finally {
      reply.element.removeAttribute("aria-busy");
      if (chat) {
        // a failed answer is not part of the conversation, nor is a message that got none
        if (answer && reply.element.dataset.status !== "error") history.push({ role: "assistant", content: answer });
        else history.pop();
      }
      controller = null;
      busy(false);
      input.focus();
    }
  }

  const form = h(
    "form.chat-form",
    {
      novalidate: true,
      onsubmit: (event) => {
        event.preventDefault();
        run();
      },
    },
    labelled(chat ? "Message" : "Prompt", input),
    h("div.controls", null, send, stop, clear, h("span.hint", null, "Enter sends, Shift+Enter starts a new line.")),
  );
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  stop.addEventListener("click", () => controller && controller.abort());
  clear.addEventListener("click", () => {
    history.length = 0;
    replace(log);
  });
  return h(
    "div.chat",
    { dataset: { testid: "chat", mode: chat ? "chat" : "completion" } },
    h(
      "div.chat-main",
      null,
      chat ? null : h("p.note", null, `${model.name} has no chat template: each prompt is continued as plain text (/v1/completions).`),
      log,
      form,
    ),
    settings.element,
  );
}
