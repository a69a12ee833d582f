/**
 * The one way the console talks to the receiver: `fetch` on the same origin with the operator's
 * key as `Authorization: Bearer` (never in a URL), JSON in and out, and every refusal turned into
 * an {@link ApiError} that says what happened in an operator's words.
 */

/** The scopes of partner API keys (docs/api.md#keys-and-scopes). */
export type Scope = 'read' | 'register' | 'money' | 'operate';

/** Where the key lives: this tab's session storage, gone when the tab closes. */
const KEY_STORAGE = 'settlement-receiver.ops-key';

export const storedKey = (): string | null => sessionStorage.getItem(KEY_STORAGE);
export const storeKey = (key: string): void => sessionStorage.setItem(KEY_STORAGE, key);
export const forgetKey = (): void => sessionStorage.removeItem(KEY_STORAGE);

/** A refusal of the API: its HTTP status, error code, message and field errors. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields: { path: string; message: string }[] = [],
    readonly body: unknown = undefined,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** What the operator should read: the server's message, with what 401, 403 and 429 mean here. */
  get explanation(): string {
    switch (this.status) {
      case 401:
        return `The key was refused (401 ${this.code}): it is not one of the receiver's OPS_API_KEYS, or no longer. Sign in again with a valid key.`;
      case 403:
        return `This key may not do that (403 ${this.code}): ${this.message}. Ask for a key with that scope.`;
      case 429:
        return `Too many failed sign-ins from this address (429 ${this.code}): ${this.message}.`;
      case 0:
        return `The receiver could not be reached: ${this.message}.`;
      default:
        return `${this.status} ${this.code}: ${this.message}`;
    }
  }
}

/** Any failure as an {@link ApiError} (a bug or a browser failure as code `error`). */
export const asApiError = (err: unknown): ApiError =>
  err instanceof ApiError ? err : new ApiError(0, 'error', String(err));

/** What the server answered to a request that went through. */
export interface Answer<T> {
  status: number;
  headers: Headers;
  body: T;
}

/** Called when the server answers 401: the key is no good, the console signs out. */
let onUnauthorized: (error: ApiError) => void = () => undefined;
export const whenUnauthorized = (handler: (error: ApiError) => void): void => {
  onUnauthorized = handler;
};

/** Query string of the defined, non-empty values of `params` (`?a=1&b=x`, or ''). */
export function query(params: Record<string, string | number | boolean | null | undefined>): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== null && v !== '') search.set(k, String(v));
  const text = search.toString();
  return text ? `?${text}` : '';
}

/** A path segment: ids such as coupon codes may hold any character. */
export const seg = (id: string): string => encodeURIComponent(id);

interface RequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
  /** The key to use instead of the stored one (signing in). */
  key?: string;
}

/** Sends a request with the key; `raw` gives the Response (the CSV download reads it as a Blob). */
async function send(path: string, options: RequestOptions, accept: string): Promise<Response> {
  const key = options.key ?? storedKey();
  const headers: Record<string, string> = { accept, ...options.headers };
  if (key) headers.authorization = `Bearer ${key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    throw new ApiError(0, 'network', (err as Error).message);
  }
  if (!res.ok) {
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    const error = (body as { error?: { code?: string; message?: string; fields?: ApiError['fields'] } })
      ?.error;
    const failure = new ApiError(
      res.status,
      error?.code ?? 'http_error',
      error?.message ?? (text.slice(0, 200) || res.statusText),
      error?.fields ?? [],
      body,
    );
    if (res.status === 401 && options.key === undefined) onUnauthorized(failure);
    throw failure;
  }
  return res;
}

/** A JSON request; resolves with the answer, rejects with an {@link ApiError}. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<Answer<T>> {
  const res = await send(path, options, 'application/json');
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : null) as T };
}

/**
 * Downloads `path` as a file through `fetch` (so the key goes in the header, never the URL) and
 * hands it to the browser as a Blob under the server's file name or `fallbackName`.
 */
export async function download(path: string, accept: string, fallbackName: string): Promise<void> {
  const res = await send(path, {}, accept);
  const blob = await res.blob();
  const disposition = res.headers.get('content-disposition') ?? '';
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? fallbackName;
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
