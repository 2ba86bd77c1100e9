/**
 * Pipeline runs across worker processes that die or change, on the embedded emulators:
 * - a worker SIGKILLed between a node's end and its downstream's release (right before, or right
 *   after, the end is recorded in the run's history — before the run is woken): the node's message
 *   comes back, finds the node finished, and does what follows its end again
 *   (`TaskLifecycle.followEndAgain`, shared/workflow/fan-in.ts), so the downstream is released and
 *   the run completes without waiting for its check timer (15 minutes here) and without running
 *   the node again;
 * - a deploy that changes the graph while a run is going: the run keeps the graph it recorded
 *   when it started, and a new run gets the new one.
 *
 * Only on the embedded emulators: what is tested is the consumer's and the fan-in's recovery, the
 * same code on any store; the per-item atomicity it relies on is what moto's serializing launcher
 * adds, and the workflow chaos suite (test/integration/reliability/workflow-chaos.*) already runs
 * SIGKILLed workflow runs with children on moto. Each case waits out a lease or a worker's
 * start-up, which moto would double.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GRAPH_STEP } from '../../../shared/pipeline/run.js';
import { testBudget, waitFor } from '../../../testing/wait.js';
import { benchForSuite } from '../../support/pipeline-bench.js';
import { targetsHalf } from '../../support/targets.js';

describe.each(targetsHalf('embedded'))('pipeline runs across worker processes on $name', (target) => {
  // Each test starts its own workers, killed after it.
  const bench = benchForSuite(target, 'pipe-kill', { worker: false, killAfterEach: true });

  it.each([
    ['before', '2026-10-01'],
    ['after', '2026-10-02'],
  ] as const)(
    'SIGKILL %s the end of node `first` is recorded in its run, before the run is woken: the downstream is still released, the node is not run again, the run completes',
    async (when, date) => {
      const left = testBudget(60_000);
      const mark = join(bench.dir, `died-${when}`);
      const doomed = await bench.startWorker({
        label: 'doomed',
        env: { KAJ_PIPELINE_DIE: `${when}:child#first`, KAJ_PIPELINE_DIE_MARK: mark },
      });
      // `first` is held until its run has suspended (waiting for it): then only `first`'s end can wake the run.
      const hold = bench.flag('hold', 'first', date);
      hold.raise();
      const created = await bench.api('POST', '/api/v1/pipelines/pl_chain/runs', { logical_date: date });
      expect(created.status).toBe(201);
      const runId = created.body.run_id as string;
      await bench.started('first', date, left());
      await waitFor(
        'the run to wait for `first`',
        async () => ((await bench.runtime.kaj.store.get(runId))?.status === 'waiting' ? true : undefined),
        { timeoutMs: left() },
      );
      hold.lower();
      expect((await doomed.exited).signal).toBe('SIGKILL');
      expect(readFileSync(mark, 'utf8')).toContain(`${when}:child#first`);

      // Where the kill left it: `first` ended, `second` not started, the run waiting for `first`.
      const keys = (await bench.history(runId)).map((e) => e.key);
      expect(keys.includes('child#first')).toBe(when === 'after');
      expect(keys).not.toContain('child_start#second');
      const view = await bench.view('pl_chain', date);
      const first = view.nodes.find((n) => n.name === 'first');
      expect((await bench.runtime.kaj.store.get(first?.task_id ?? ''))?.status).toBe('succeeded');
      expect((await bench.runtime.kaj.store.get(runId))?.status).toBe('waiting');

      // The next worker gets `first`'s message back (within about a lease) and releases `second`.
      await bench.startWorker({ label: 'survivor' });
      const done = await bench.until('pl_chain', date, ['succeeded', 'failed'], left());
      expect(done.status).toBe('succeeded');
      expect(done.nodes.map((n) => `${n.name}:${n.state}:${n.try}`)).toEqual([
        'first:succeeded:1',
        'second:succeeded:1',
        'third:succeeded:1',
      ]);
      const log = bench.nodeLog(date);
      expect(log.filter((e) => e.event === 'S').map((e) => e.node)).toEqual(['first', 'second', 'third']);
      // `first` ran on the worker that died, the rest on the survivor.
      expect(log.find((e) => e.node === 'first')?.pid).toBe(doomed.child.pid);
      expect(log.find((e) => e.node === 'second')?.pid).not.toBe(doomed.child.pid);
    },
    60_000,
  );

  /**
   * Waits for the run of `pl_evolving` on `date` to succeed and checks that it ran `nodes`: its
   * view, the graph it recorded, the nodes that started. Returns the recorded graph.
   */
  async function expectRanWith(date: string, runId: string, nodes: string[], timeoutMs: number): Promise<unknown> {
    const done = await bench.until('pl_evolving', date, ['succeeded', 'failed'], timeoutMs);
    expect(done.status).toBe('succeeded');
    expect(done.nodes.map((n) => `${n.name}:${n.state}`)).toEqual(nodes.map((n) => `${n}:succeeded`));
    const graph = (await bench.history(runId)).find((e) => e.key === `step#${GRAPH_STEP}`)?.value;
    expect(Object.keys(graph as object)).toEqual(nodes);
    expect(new Set(bench.nodeLog(date).map((e) => e.node))).toEqual(new Set(nodes));
    return graph;
  }

  it('the graph changed mid-run: the run keeps the graph it started with, a new run gets the new one', async () => {
    const left = testBudget(60_000);
    const [before, after] = ['2026-10-05', '2026-10-06'];
    const gate = bench.flag('hold', 'gate', before);
    gate.raise();
    const old = await bench.startWorker({ label: 'graph-a', env: { KAJ_PIPELINE_GRAPH: 'a' } });
    const created = await bench.api('POST', '/api/v1/pipelines/pl_evolving/runs', { logical_date: before });
    await bench.started('gate', before, left());
    const running = await bench.until('pl_evolving', before, ['running'], left());
    expect(running.nodes.map((n) => n.name)).toEqual(['gate', 'left', 'right']);

    // The deploy: the old worker stops taking messages and finishes what it runs (the gate, once
    // released); the new one has graph b (`right` removed, `extra` added after `left`).
    old.kill('SIGTERM');
    const fresh = await bench.startWorker({ label: 'graph-b', env: { KAJ_PIPELINE_GRAPH: 'b' } });
    gate.lower();
    expect(await old.exited).toMatchObject({ code: 0 });
    await expectRanWith(before, created.body.run_id as string, ['gate', 'left', 'right'], left());
    // The new code ran the rest of the old graph: `right`, which it no longer declares.
    const ranOn = Object.fromEntries(bench.nodeLog(before).map((e) => [e.node, e.pid]));
    expect(ranOn).toEqual({ gate: old.child.pid, left: fresh.child.pid, right: fresh.child.pid });

    const next = await bench.api('POST', '/api/v1/pipelines/pl_evolving/runs', { logical_date: after });
    const graphB = await expectRanWith(after, next.body.run_id as string, ['gate', 'left', 'extra'], left());
    expect(graphB).toMatchObject({ extra: { after: ['left'] } });
  }, 60_000);
});
