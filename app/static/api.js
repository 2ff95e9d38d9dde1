// The service's public HTTP API, as the page uses it. Errors are the server's {"error": ...}.

/** A failed request: `status` is the HTTP status (0 when the server could not be reached). */
export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.body = body;
  }
}

/**
 * Call the API.
 * @param {string} path - absolute path on this server ("/v2/...").
 * @param {{method?: string, json?: any, body?: BodyInit, headers?: object}} options
 * @returns {Promise<any>} the parsed JSON body (null when empty).
 */
export async function api(path, { method = "GET", json, body, headers = {} } = {}) {
  const init = { method, headers: { Accept: "application/json", ...headers }, credentials: "same-origin" };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers["Content-Type"] = "application/json";
  } else if (body !== undefined) {
    init.body = body;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    throw new ApiError(0, `cannot reach the server (${error.message})`, null);
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const message = errorMessage(data) || text || response.statusText;
    throw new ApiError(response.status, message, data);
  }
  return data;
}

/** "/v2/models/<name>" with the name escaped. */
export function modelPath(name) {
  return `/v2/models/${encodeURIComponent(name)}`;
}

export const repositoryIndex = () => api("/v2/repository/index", { method: "POST" });
export const modelMetadata = (name) => api(modelPath(name));
export const modelConfig = (name) => api(`${modelPath(name)}/config`);
export const moduleTree = (name) => api(`${modelPath(name)}/modules`);
export const parameters = (name, { stats = false, bins = 24 } = {}) =>
  api(`${modelPath(name)}/parameters?stats=${stats}&bins=${bins}`);
export const infer = (name, request) => api(`${modelPath(name)}/infer`, { method: "POST", json: request });
export const activations = (name, request) =>
  api(`${modelPath(name)}/activations`, { method: "POST", json: request });

/**
 * Upload a checkpoint's bytes as a new version.
 * @param {string} name - the model.
 * @param {Blob} file - the checkpoint (safetensors, .npz, .pt/.pth).
 * @param {{key?: string, strict?: boolean}} options - the key is sent only in this request's header.
 */
export function uploadStateDict(name, file, { key = "", strict = true } = {}) {
  const headers = { "Content-Type": "application/octet-stream" };
  if (key) headers.Authorization = `Bearer ${key}`;
  return api(`${modelPath(name)}/state_dict?strict=${strict}`, { method: "PUT", body: file, headers });
}

/** The message of an error body: V2's {"error": "..."} or OpenAI's {"error": {"message": "..."}}. */
export function errorMessage(data) {
  if (!data || data.error === undefined) return null;
  if (typeof data.error === "string") return data.error;
  return data.error && typeof data.error.message === "string" ? data.error.message : JSON.stringify(data.error);
}

/**
 * POST `json` and read the answer as server-sent events (`data: <json>` frames), as they arrive.
 * Resolves when the stream ends (or at `data: [DONE]`); a `{"error": ...}` frame throws an ApiError
 * with its message. Aborting `signal` closes the connection, which cancels the server's generation.
 * @param {string} path - absolute path on this server.
 * @param {any} json - the request body.
 * @param {{signal?: AbortSignal, onEvent: (event: any) => void}} options
 */
export async function postEventStream(path, json, { signal, onEvent }) {
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: { Accept: "text/event-stream", "Content-Type": "application/json" },
      body: JSON.stringify(json),
      credentials: "same-origin",
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, `cannot reach the server (${error.message})`, null);
  }
  if (!response.ok) {
    const text = await response.text();
    let data = null;
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
    throw new ApiError(response.status, errorMessage(data) || text || response.statusText, data);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = frame
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (!data) continue;
      if (data === "[DONE]") {
        await reader.cancel();
        return;
      }
      const event = JSON.parse(data);
      if (event && event.error !== undefined) {
        await reader.cancel().catch(() => {});
        throw new ApiError(0, errorMessage(event), event);
      }
      onEvent(event);
    }
  }
}
