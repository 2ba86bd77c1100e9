/**
 * Random cursors and bodies into the API handler: whatever a client sends, the answer is a 2xx or
 * a 4xx in the error shape, never a 5xx. Deterministic (the draws come from a hash of a counter),
 * so a failure names an input that fails again.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { DEVELOPMENT_ID_SECRET } from '../../../shared/service/all-in-one.js';
import { CursorSigner } from '../../../shared/task/cursor.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { FakeClock, sequenceRandom } from '../../../testing/doubles.js';
import { apiEvent, unitKaj } from '../../../testing/fixtures.js';
import { MemoryScheduleStore } from '../../../testing/memory-schedule-store.js';

const registry = new TaskRegistry([
  defineTask({ type: 'job', schema: z.object({ n: z.number().optional() }), handler: async () => ({}) }),
]);
const ALICE = 'arn:aws:iam::1:role/alice';
const CASES = 300;

/** Draws in [0, 1) from SHA-256 of `<seed>:<n>`: the same seed gives the same inputs. */
function draws(seed: string): () => number {
  let n = 0;
  return () => {
    n += 1;
    return createHash('sha256').update(`${seed}:${n}`).digest().readUInt32BE(0) / 2 ** 32;
  };
}

function generator(seed: string) {
  const r = draws(seed);
  const int = (max: number) => Math.floor(r() * max);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  const CHARS = 'AZaz09-_.%=+/ #é\u0000\u{1F600}';
  const text = (max: number) => Array.from({ length: int(max + 1) }, () => pick([...CHARS])).join('');
  const KEYS = ['type', 'payload', 'note', 'from', 'to', 'tasks', 'every', 'cron', 'at', 'n', '__proto__', ''];
  const value = (depth: number): unknown => {
    switch (int(depth <= 0 ? 6 : 9)) {
      case 0:
        return null;
      case 1:
        return pick([true, false]);
      case 2:
        return pick([0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 1, 42]);
      case 3:
        return text(12);
      case 4:
        return pick(['job', 'delayed', 'failed', '2030-01-01T00:00:00.000Z', `t_${'a'.repeat(32)}`, '1h']);
      case 5:
        return 'x'.repeat(pick([0, 1, 1024, 1100, 3000]));
      case 6:
      case 7:
        return Array.from({ length: int(4) }, () => value(depth - 1));
      default:
        return Object.fromEntries(Array.from({ length: int(4) }, () => [pick(KEYS), value(depth - 1)]));
    }
  };
  const tasks = new CursorSigner(`${DEVELOPMENT_ID_SECRET}\nlisting`, 'kaj-list-cursor');
  const schedules = new CursorSigner(`${DEVELOPMENT_ID_SECRET}\nschedules`, 'kaj-schedule-cursor');
  const position = () => Array.from({ length: int(4) }, () => value(1));
  /** A cursor: random text, base64url of JSON, or a position signed with the listing's own key. */
  const cursor = (status: string): string => {
    switch (int(4)) {
      case 0:
        return text(60);
      case 1:
        return Buffer.from(JSON.stringify(value(2)) ?? '').toString('base64url');
      case 2:
        return tasks.encode(position(), [status, '', ALICE]);
      default:
        return schedules.encode(position(), ['owner', ALICE]);
    }
  };
  /** A body: JSON of any shape, or text that is not JSON. */
  const body = (): string => (int(5) === 0 ? text(20) : (JSON.stringify(value(3)) ?? 'null'));
  return { int, pick, cursor, body };
}

async function setup() {
  const store = new MemoryScheduleStore();
  const u = unitKaj(registry, sequenceRandom([0.5]), new FakeClock(Date.parse('2026-12-01T10:00:00.000Z')), {
    schedules: store,
  });
  const send = async (method: string, path: string, o: { body?: string; query?: Record<string, string> } = {}) => {
    const e = apiEvent(method, path, { userArn: ALICE, ...(o.body === undefined ? {} : { body: o.body }) });
    const r = await u.kaj.handleHttp(o.query === undefined ? e : { ...e, queryStringParameters: o.query });
    return { status: r.statusCode, body: JSON.parse(r.body) as { error?: { code: string; message: string } } };
  };
  expect((await send('PUT', '/api/v1/schedules/s', { body: '{"every":"1h","type":"job"}' })).status).toBe(201);
  return send;
}

const answered = (r: { status: number; body: { error?: { code: string; message: string } } }, what: string) => {
  expect(r.status, what).toBeLessThan(500);
  if (r.status >= 400) expect(r.body.error, what).toEqual(expect.objectContaining({ code: expect.any(String) }));
};

describe('API fuzz: never a 5xx', () => {
  it(`${CASES} random cursors into both listings`, async () => {
    const send = await setup();
    const g = generator('cursors');
    for (let i = 0; i < CASES; i += 1) {
      const status = g.pick(['failed', 'delayed', 'running']);
      const cursor = g.cursor(status);
      const what = `#${i} cursor ${JSON.stringify(cursor)}`;
      answered(await send('GET', '/api/v1/tasks', { query: { status, cursor } }), `tasks ${what}`);
      answered(await send('GET', '/api/v1/schedules', { query: { cursor } }), `schedules ${what}`);
    }
  });

  it(`${CASES} random bodies into every route that takes one`, async () => {
    const send = await setup();
    const g = generator('bodies');
    const routes = [
      ['POST', '/api/v1/tasks'],
      ['POST', '/api/v1/tasks/batch'],
      ['PUT', '/api/v1/schedules/s'],
      ['PUT', '/api/v1/schedules/other'],
      ['POST', '/api/v1/schedules/s/pause'],
      ['POST', '/api/v1/schedules/s/backfill'],
      ['POST', '/api/v1/schedules/s/resume'],
    ] as const;
    for (let i = 0; i < CASES; i += 1) {
      const [method, path] = g.pick(routes);
      const raw = g.body();
      answered(await send(method, path, { body: raw }), `#${i} ${method} ${path} ${JSON.stringify(raw)}`);
    }
  });
});
