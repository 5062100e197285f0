// One HTTP exchange with a sheetlog server (api.md): JSON in and out, or raw bytes for
// blob bodies. Network failures reject; the callers turn them into StorageError.

/** Where the server is, and how to reach it. */
export interface SheetlogConnection {
  /** Base URL, e.g. "http://127.0.0.1:8787". */
  url: string;
  /** Bearer token, when the server was started with --token. */
  token?: string | undefined;
  /** fetch implementation (default: the global fetch). */
  fetch?: typeof fetch | undefined;
}

/** api.md's error body: {"error": {"code", "message", ...}}. */
export interface ApiErrorBody {
  code: string;
  message: string;
  next_seq?: number;
  first_seq?: number;
}

export interface JsonReply {
  status: number;
  // The parsed body (null if there was none or it was not JSON).
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  error: ApiErrorBody | undefined;
}

export interface BytesReply {
  status: number;
  bytes: Uint8Array;
  error: ApiErrorBody | undefined;
}

export class Http {
  readonly #base: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(connection: SheetlogConnection) {
    this.#base = connection.url.replace(/\/+$/, "");
    this.#token = connection.token;
    this.#fetch = connection.fetch ?? globalThis.fetch.bind(globalThis);
  }

  async json(method: string, path: string, body?: unknown): Promise<JsonReply> {
    const headers: Record<string, string> = this.#headers();
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await this.#fetch(this.#base + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : null;
    } catch {
      parsed = null;
    }
    return { status: response.status, body: parsed, error: errorOf(parsed) };
  }

  async bytes(method: string, path: string, body?: Uint8Array): Promise<BytesReply> {
    const headers: Record<string, string> = this.#headers();
    if (body !== undefined) headers["content-type"] = "application/octet-stream";
    // A Uint8Array over a plain ArrayBuffer is a BodyInit (TypeScript's DOM types
    // only accept that flavour).
    const payload = body === undefined ? undefined : new Uint8Array(body);
    // An absolute URL is a presigned one of the blob store itself (an S3 store: api.md
    // "Deployment forms"): it carries its own signature and never the server's token.
    const absolute = /^https?:\/\//.test(path);
    if (absolute) delete headers["authorization"];
    const response = await this.#fetch(absolute ? path : this.#base + path, {
      method,
      headers,
      body: payload,
    });
    const bytes = new Uint8Array(await response.arrayBuffer());
    let error: ApiErrorBody | undefined;
    if (response.status >= 400) {
      try {
        error = errorOf(JSON.parse(new TextDecoder().decode(bytes)));
      } catch {
        error = undefined;
      }
    }
    return { status: response.status, bytes, error };
  }

  #headers(): Record<string, string> {
    return this.#token ? { authorization: "Bearer " + this.#token } : {};
  }
}

function errorOf(body: unknown): ApiErrorBody | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const error = (body as { error?: unknown }).error;
  if (typeof error !== "object" || error === null) return undefined;
  return error as ApiErrorBody;
}

/** "what failed: the server's message (status)" for StorageError messages. */
export function describe(what: string, status: number, error: ApiErrorBody | undefined): string {
  return `${what}: ${error?.message ?? "HTTP " + status} (${status})`;
}
