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
    const message = data && typeof data.error === "string" ? data.error : text || response.statusText;
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
