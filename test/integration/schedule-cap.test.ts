/**
 * The per-owner schedule cap through the API, on each emulator (embedded: the count and the put
 * one after the other, dynalite having no transactions; moto: one TransactWriteItems): with a cap
 * of 3, the fourth create is 422 `schedule_limit_reached` naming `name` and stores nothing;
 * replacing a schedule at the cap succeeds; a delete frees a slot for the next create.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { LocalRuntime } from '../../local/runtime.js';
import { defineTask, TaskRegistry } from '../../shared/task/define.js';
import { callApi, runtimeForSuite } from '../support/suite-runtime.js';
import { targets } from '../support/targets.js';

const registry = new TaskRegistry([
  defineTask({ type: 'cap_probe', schema: z.object({}), handler: async () => ({ ok: true }) }),
]);

const call = callApi;

const MAX = 3;
// Far in the future: nothing runs while the test looks.
const spec = (minute = 0) => ({ cron: `${minute} 0 1 1 *`, type: 'cap_probe' });

describe.each(targets())('schedules per owner on $name', (target) => {
  let runtime: LocalRuntime;
  runtimeForSuite(
    target,
    'cap',
    {
      registry,
      waitTimeSeconds: 1,
      scheduling: { maxPerOwner: MAX },
    },
    (r) => (runtime = r),
    60_000,
  );

  it('max + 1 creates: the last is 422 schedule_limit_reached naming name; a delete frees a slot', async () => {
    for (let n = 1; n <= MAX; n += 1) {
      expect((await call(runtime, 'PUT', `/api/v1/schedules/cap-${n}`, spec())).status).toBe(201);
    }
    const over = await call(runtime, 'PUT', '/api/v1/schedules/cap-4', spec());
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'schedule_limit_reached', field: 'name' });
    expect(String((over.body.error as { message: string }).message)).toContain(`${MAX} schedules`);
    expect((await call(runtime, 'GET', '/api/v1/schedules/cap-4')).status).toBe(404);

    // At the cap, a schedule that exists can still be changed (no slot taken).
    const replaced = await call(runtime, 'PUT', '/api/v1/schedules/cap-1', spec(30));
    expect(replaced.status).toBe(200);
    expect(replaced.body.changed).toBe(true);

    expect((await call(runtime, 'DELETE', '/api/v1/schedules/cap-2')).status).toBe(200);
    expect((await call(runtime, 'PUT', '/api/v1/schedules/cap-4', spec())).status).toBe(201);
    expect((await call(runtime, 'PUT', '/api/v1/schedules/cap-5', spec())).status).toBe(422);

    // The listing shows schedules only, never the owners' count items.
    const list = await call(runtime, 'GET', '/api/v1/schedules?limit=200');
    expect((list.body.items as { name: string }[]).map((s) => s.name).sort()).toEqual(['cap-1', 'cap-3', 'cap-4']);
  }, 60_000);
});
