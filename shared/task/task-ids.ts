/**
 * How tasks get their ids where the caller does not leave it to chance: an idempotent submit (an
 * HMAC of the caller's key), a run of a type that identifies its runs (a pipeline's logical
 * date), and the fingerprint that tells a replay from a conflicting reuse of a key.
 *
 * @module
 */
import { createHash, createHmac } from 'node:crypto';

/**
 * The task id of a run of a type that identifies its runs (`runIdentity`: a pipeline's
 * `<name>@<logical date>`): from the owner, the type and the key only, whoever creates it.
 */
export function identifiedRunTaskId(owner: string, type: string, key: string): string {
  return `t_${createHash('sha256').update(`identified-run\n${owner}\n${type}\n${key}`).digest('hex').slice(0, 32)}`;
}

/**
 * Task id for an idempotent submit: keys are scoped per owner and task type, and the id is an
 * HMAC under the deployment's secret, so nobody can derive another caller's task id from a key.
 */
export function idempotentTaskId(secret: string, owner: string, type: string, key: string): string {
  return `t_${createHmac('sha256', secret).update(`${owner}\n${type}\n${key}`).digest('hex').slice(0, 32)}`;
}

/** Hash of what the client asked for (the request without its key), so a replay can be told from a conflicting reuse of a key. */
export function fingerprint(req: { readonly idempotency_key?: string | undefined }): string {
  const { idempotency_key: _ignored, ...rest } = req;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
}

/** JSON with object keys sorted, so equal values hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
