/**
 * Workflow runs under SIGKILL chaos: many runs mixing steps, durable sleeps, signals (some sent
 * before the run reaches its wait, some never: the wait times out) and child tasks, on two
 * worker processes of which one is SIGKILLed every 2 s and replaced. Asserted once all is done:
 * - 0 lost: every run and every child ends `succeeded`;
 * - 0 stuck: no run or child is left waiting, queued or running;
 * - no recorded step ran again: no step start (in the execution log) comes after the time its
 *   result was recorded in the run's history (a step cut off by a kill before its record is run
 *   again: that is at-least-once, and allowed).
 *
 * Size: 500 runs on the embedded emulators; 40 on moto, which serves one request at a time (the
 * same workload; 120 runs took two minutes there beside the rest of the suite).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TaskRecord } from '../../../shared/task/model.js';
import { Bench } from '../../../testing/harness.js';
import { waitFor } from '../../../testing/wait.js';
import type { Target } from '../../support/targets.js';

const SHAPES = ['steps', 'sleep', 'signal', 'children'] as const;
const KILL_EVERY_MS = 2_000;
const MAX_KILLS = 12;

/** The cases, on one target (run by `workflow-chaos.test.ts` and `workflow-chaos.moto.test.ts`). */
export function workflowChaosCases(target: Target): void {
  const runs = target.name === 'moto' ? 40 : 500;
  let bench: Bench;

  beforeAll(async () => {
    bench = await Bench.start(target, { tag: 'wfchaos', lease: 3, settings: { outboxGraceSeconds: 1 } });
  });
  afterAll(async () => bench?.stop());

  it(`${runs} runs mixing steps, sleeps, signals and children; a worker SIGKILLed every 2 s: 0 lost, 0 stuck, no recorded step run again`, async () => {
    // Two worker slots; the kill loop SIGKILLs the older worker and starts a new one in its place.
    const slots = [await bench.startWorker(), await bench.startWorker()];
    let kills = 0;
    let killing = true;
    const killer = setInterval(() => {
      if (!killing || kills >= MAX_KILLS) return;
      const victim = slots.shift();
      if (victim === undefined) return;
      victim.kill('SIGKILL');
      kills += 1;
      void bench.startWorker({ waitReady: false }).then((w) => slots.push(w));
    }, KILL_EVERY_MS);
    try {
      const ids: { id: string; shape: (typeof SHAPES)[number] }[] = [];
      for (let i = 0; i < runs; i += 1) {
        const shape = SHAPES[i % SHAPES.length] as (typeof SHAPES)[number];
        ids.push({ id: await bench.submit('wf_chaos', { shape }), shape });
      }
      // Half of the signal runs get their signal (many before they reach the wait); the others time out.
      const signalled = ids.filter((r) => r.shape === 'signal').filter((_, i) => i % 2 === 0);
      for (const r of signalled) {
        const res = await fetch(`${bench.runtime.url}/api/v1/tasks/${r.id}/signals/go`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ ok: true }),
        });
        expect([202, 409]).toContain(res.status); // 409: its 3 s wait already ended without it
      }
      const runIds = new Set(ids.map((r) => r.id));
      let lastDone = 0;
      let lastProgress = Date.now();
      const finished = await waitFor(
        'every run and child to finish',
        async () => {
          const all = await bench.records();
          const open = all.filter((r) => !['succeeded', 'failed', 'cancelled'].includes(r.status));
          const done = all.filter((r) => runIds.has(r.task_id) && r.status === 'succeeded').length;
          if (done > lastDone) {
            lastDone = done;
            lastProgress = Date.now();
          }
          const stalled = Date.now() - lastProgress > 120_000;
          const over = open.length === 0 && all.filter((r) => runIds.has(r.task_id)).length === runs;
          return over || stalled ? { all, stalled: !over, open } : undefined;
        },
        { timeoutMs: 600_000, intervalMs: 1_000 },
      );
      killing = false;
      if (finished.stalled) {
        console.info(bench.diagnostics());
        const history = bench.runtime.kaj.history;
        const detail = await Promise.all(
          finished.open.map(async (r) => ({
            task: `${r.task_id} ${r.type} ${r.status} run_at=${r.run_at} open=${r.children_open} wake=${r.wake_requested} parent=${r.parent_id} attempts=${r.attempts} dispatch=${r.dispatch_id} outbox=${r.outbox_pk}`,
            history: (await history?.read(r.task_id))?.map(
              (e) => `${e.key}@${e.at}${e.until ? ` until ${e.until}` : ''}`,
            ),
          })),
        );
        expect(detail).toEqual([]);
      }
      const byStatus = (rs: TaskRecord[]) => {
        const m: Record<string, number> = {};
        for (const r of rs) m[r.status] = (m[r.status] ?? 0) + 1;
        return m;
      };
      const runRecords = finished.all.filter((r) => runIds.has(r.task_id));
      const children = finished.all.filter((r) => r.parent_id !== undefined);
      expect(byStatus(runRecords)).toEqual({ succeeded: runs });
      expect(byStatus(children)).toEqual({ succeeded: 2 * ids.filter((r) => r.shape === 'children').length });
      expect(kills).toBeGreaterThanOrEqual(3);

      // No recorded step ran again: every start of a step precedes the time its result was recorded.
      const history = bench.runtime.kaj.history;
      expect(history).toBeDefined();
      const rerunsAfterRecord: string[] = [];
      let recordedSteps = 0;
      for (const { id } of ids) {
        for (const e of await (history as NonNullable<typeof history>).read(id)) {
          if (e.kind !== 'step') continue;
          recordedSteps += 1;
          const name = e.key.slice('step#'.length);
          for (const s of bench.starts(`${id}:${name}`)) if (s.at > e.at) rerunsAfterRecord.push(`${id}:${name}`);
        }
      }
      expect(recordedSteps).toBe(2 * runs);
      expect(rerunsAfterRecord).toEqual([]);
      const signalResults = runRecords
        .map((r) => r.result as { shape: string; signalled?: boolean })
        .filter((r) => r.shape === 'signal');
      expect(signalResults.some((r) => r.signalled === true)).toBe(true);
      expect(signalResults.some((r) => r.signalled === false)).toBe(true);
      console.info(
        `workflow chaos on ${target.name}: ${runs} runs, ${children.length} children, ${kills} kills; ` +
          `step executions ${bench.executions().filter((x) => x.event === 'S' && x.taskId.includes(':')).length} for ${recordedSteps} recorded steps`,
      );
    } finally {
      killing = false;
      clearInterval(killer);
      await bench.killWorkers();
    }
  }, 900_000);
}
