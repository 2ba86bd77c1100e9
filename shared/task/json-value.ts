/**
 * What Kaj agrees to store for a payload or a result: JSON that DynamoDB (through the document
 * client) accepts and gives back unchanged. Checked before anything is written, so a value the
 * store would refuse is a clear 4xx (payload) or a clear permanent failure (result) — never an
 * outage that loops.
 *
 * The rules, and why:
 * - numbers finite (JSON has no NaN/Infinity; `JSON.stringify` would silently write `null`);
 * - integers within ±(2^53 − 1): beyond, the document client refuses to marshal them and a
 *   JavaScript number has already lost digits; send such values as strings;
 * - non-zero numbers at least 1e-130 in magnitude (DynamoDB's smallest number);
 * - no empty object keys (DynamoDB: "Empty attribute name", at any depth);
 * - strings well-formed UTF-16 (a lone surrogate cannot be encoded as UTF-8);
 * - at most {@link MAX_JSON_DEPTH} levels (DynamoDB nests 32 levels; the record holds the value one level down);
 * - no BigInt, function, symbol, Map, Set or cycle; `toJSON()` is honoured as JSON would
 *   (a `Date` becomes its ISO string); `undefined` object members are dropped, array holes become null.
 */

/** DynamoDB nests up to 32 levels; the value sits inside the record and we keep a margin. */
export const MAX_JSON_DEPTH = 30;
const MIN_MAGNITUDE = 1e-130;

/** Why a value cannot be stored, and where (`payload.items[3].amount`). */
export interface JsonProblem {
  readonly path: string;
  readonly reason: string;
}

export type JsonCheck =
  | { readonly ok: true; readonly value: unknown; readonly bytes: number }
  | ({ readonly ok: false } & JsonProblem);

class Unstorable extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
  }
}

/**
 * Returns the value as it will be stored (normalised as JSON would: `toJSON`, dropped
 * `undefined` members) and its JSON size, or the first problem with its path.
 * @param root the name of the value in messages (`payload`, `result`)
 */
export function checkJsonValue(value: unknown, root: string, maxBytes: number): JsonCheck {
  let normalised: unknown;
  try {
    normalised = normalise(value, root, 0, new Set());
  } catch (err) {
    if (err instanceof Unstorable) return { ok: false, path: err.path, reason: err.reason };
    // A throwing getter or toJSON: not a value we can store.
    return {
      ok: false,
      path: root,
      reason: `could not be read as JSON (${err instanceof Error ? err.message : String(err)})`,
    };
  }
  const bytes = Buffer.byteLength(JSON.stringify(normalised ?? null));
  if (bytes > maxBytes) return { ok: false, path: root, reason: `${bytes} bytes exceeds the limit of ${maxBytes}` };
  return { ok: true, value: normalised, bytes };
}

function normalise(v: unknown, path: string, depth: number, seen: Set<object>): unknown {
  if (v === null || typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    if (!v.isWellFormed()) throw new Unstorable(path, 'contains a lone UTF-16 surrogate (not encodable as UTF-8)');
    return v;
  }
  if (typeof v === 'number') return number(v, path);
  if (typeof v === 'bigint') throw new Unstorable(path, 'a BigInt is not JSON; send it as a string');
  if (typeof v === 'function' || typeof v === 'symbol') throw new Unstorable(path, `a ${typeof v} is not JSON`);
  if (v === undefined) return undefined;
  if (depth >= MAX_JSON_DEPTH) throw new Unstorable(path, `nested deeper than ${MAX_JSON_DEPTH} levels`);
  const obj = v as object;
  if (seen.has(obj)) throw new Unstorable(path, 'is circular');
  if (typeof (obj as { toJSON?: unknown }).toJSON === 'function') {
    return normalise((obj as { toJSON: (key: string) => unknown }).toJSON(''), path, depth, seen);
  }
  if (obj instanceof Map || obj instanceof Set) {
    throw new Unstorable(
      path,
      `a ${obj instanceof Map ? 'Map' : 'Set'} is not JSON (it would be stored as {}); convert it`,
    );
  }
  if (ArrayBuffer.isView(obj) || obj instanceof ArrayBuffer)
    throw new Unstorable(path, 'binary data is not JSON; encode it as base64');
  seen.add(obj);
  try {
    if (Array.isArray(obj)) {
      const out: unknown[] = [];
      for (let i = 0; i < obj.length; i += 1) {
        const item = normalise(obj[i], `${path}[${i}]`, depth + 1, seen);
        out.push(item === undefined ? null : item);
      }
      return out;
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(obj)) {
      const childPath = `${path}.${key}`;
      if (key === '') throw new Unstorable(`${path}.""`, 'an empty key cannot be stored');
      if (!key.isWellFormed()) throw new Unstorable(childPath, 'the key contains a lone UTF-16 surrogate');
      const item = normalise((obj as Record<string, unknown>)[key], childPath, depth + 1, seen);
      if (item !== undefined) out[key] = item;
    }
    return out;
  } finally {
    seen.delete(obj);
  }
}

function number(n: number, path: string): number {
  if (!Number.isFinite(n)) throw new Unstorable(path, `${n} is not a JSON number`);
  if (Number.isInteger(n) && Math.abs(n) > Number.MAX_SAFE_INTEGER) {
    throw new Unstorable(path, `${n} is beyond ±(2^53 − 1) and cannot be stored exactly; send it as a string`);
  }
  if (n !== 0 && Math.abs(n) < MIN_MAGNITUDE) throw new Unstorable(path, `${n} is smaller in magnitude than 1e-130`);
  // -0 is not JSON-distinguishable from 0; store 0.
  return n === 0 ? 0 : n;
}

/** Makes a string safe to store: well-formed, and at most `max` characters. */
export function storableText(s: string, max: number): string {
  const text = s.isWellFormed() ? s : s.toWellFormed();
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
