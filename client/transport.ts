/**
 * How a `KajClient` reaches Kaj: over HTTP (the task API, `client.ts`) or in the caller's own
 * process (direct mode, `direct.ts`). Both answer each request of the task API as the API does,
 * so the client's code above them — bodies, retries, idempotency keys, results and errors — is one.
 *
 * @module
 */

/** One answer of the task API: its status and JSON body (`{ error: { code, message, field? } }` for a status ≥ 400). */
export interface KajAnswer {
  readonly status: number;
  readonly body: unknown;
  /** Seconds to wait before trying again (`Retry-After`). */
  readonly retryAfterSeconds?: number;
  /** Direct mode: the error behind an error answer (the `cause` of the client's KajApiError). */
  readonly cause?: unknown;
}

export interface KajTransport {
  readonly mode: 'http' | 'direct';
  /**
   * One request of the task API (`POST /api/v1/tasks`, ...), its body a JSON value.
   * @throws KajUnreachableError when it could not be made (retried by the client), another
   * KajClientError when it never can be (not retried)
   */
  request(method: string, path: string, body?: unknown): Promise<KajAnswer>;
}
