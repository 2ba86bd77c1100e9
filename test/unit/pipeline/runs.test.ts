/**
 * Pipeline runs on the in-memory fakes, with pipelines of their own: nodes start only after
 * their upstreams end (whatever order the queue delivers in), no more runs are active than
 * `maxActiveRuns`, a run keeps the graph it started with, and a clear runs its nodes again.
 */
import * as z from 'zod';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { definePipeline, node } from '../../../shared/pipeline/define.js';
import { defineTask, type TaskContext, TaskRegistry } from '../../../shared/task/define.js';
import { seededRandom } from '../../../testing/determinism.js';
import { MemoryHistoryStore } from '../../../testing/memory-history-store.js';
import { MemoryLimitStore } from '../../../testing/memory-limit-store.js';
import { drivenKaj } from '../../../testing/queue-drain.js';

interface Event {
  readonly node: string;
  readonly day: string | undefined;
  readonly at: number;
  readonly kind: 'start' | 'end';
}

function recorder() {
  const events: Event[] = [];
  let tick = 0;
  const task = (type: string) =>
    defineTask({
      type,
      schema: z.strictObject({}),
      handler: async (_p, ctx: TaskContext) => {
        const day = ctx.logicalDate?.toISOString().slice(0, 10);
        events.push({ node: type, day, at: tick++, kind: 'start' });
        events.push({ node: type, day, at: tick++, kind: 'end' });
        return { day };
      },
    });
  return { events, task };
}

function kaj(registry: TaskRegistry) {
  const limits = new MemoryLimitStore();
  const u = drivenKaj(registry, { history: new MemoryHistoryStore(), limits, admitPollMs: 5_000 });
  return {
    ...u,
    limits,
    drain: (pick?: (n: number) => number) =>
      u.drain({ advance: (ms) => vi.advanceTimersByTimeAsync(ms), ...(pick ? { pick } : {}) }),
  };
}

describe('pipeline runs', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      now: Date.parse('2026-12-01T00:00:00Z'),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
  });
  afterEach(() => vi.useRealTimers());

  it('every node starts after each of its upstreams ended, for any delivery order', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const { events, task } = recorder();
      const t = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => [n, task(`n_${n}`)]));
      const p = definePipeline({
        name: 'diamond',
        nodes: {
          a: node(t.a!),
          b: node(t.b!, { after: ['a'] }),
          c: node(t.c!, { after: ['a'] }),
          d: node(t.d!, { after: ['b', 'c'] }),
          e: node(t.e!),
          f: node(t.f!, { after: ['e', 'c'] }),
          g: node(t.g!, { after: ['d', 'f'] }),
        },
      });
      const u = kaj(new TaskRegistry([...Object.values(t), p]));
      await u.api('POST', '/api/v1/pipelines/diamond/runs', { logical_date: '2026-11-28' });
      const random = seededRandom(seed);
      await u.drain((n) => Math.floor(random.next() * n));
      const run = await u.api('GET', '/api/v1/pipelines/diamond/runs/2026-11-28');
      expect(run.json.status, `seed ${seed}`).toBe('succeeded');
      const at = (n: string, kind: Event['kind']) =>
        events.find((e) => e.node === `n_${n}` && e.kind === kind)?.at ?? -1;
      for (const [name, n] of Object.entries(p.pipeline.graph)) {
        for (const up of n.after)
          expect(at(name, 'start'), `seed ${seed}: ${name} after ${up}`).toBeGreaterThan(at(up, 'end'));
      }
      expect(new Set(events.map((e) => e.day))).toEqual(new Set(['2026-11-28']));
    }
  });

  it('maxActiveRuns 1: the runs of three dates never overlap, each node sees its own date', async () => {
    const { events, task } = recorder();
    const x = task('step_x');
    const y = task('step_y');
    const p = definePipeline({
      name: 'one_at_a_time',
      maxActiveRuns: 1,
      nodes: { x: node(x), y: node(y, { after: ['x'] }) },
    });
    const u = kaj(new TaskRegistry([x, y, p]));
    for (const day of ['2026-11-26', '2026-11-27', '2026-11-28']) {
      await u.api('POST', '/api/v1/pipelines/one_at_a_time/runs', { logical_date: day });
    }
    const random = seededRandom(7);
    await u.drain((n) => Math.floor(random.next() * n));
    const runs = await u.api('GET', '/api/v1/pipelines/one_at_a_time/runs?from=2026-11-26&to=2026-11-28');
    expect(runs.json.items.map((r: any) => `${r.logical_date}:${r.status}`)).toEqual([
      '2026-11-28:succeeded',
      '2026-11-27:succeeded',
      '2026-11-26:succeeded',
    ]);
    // Each date's nodes form one block: a run's first node starts after the previous run's last ended.
    const days = events.filter((e) => e.kind === 'start').map((e) => e.day);
    const blocks = days.filter((d, i) => d !== days[i - 1]);
    expect(blocks).toHaveLength(3);
    expect(new Set(blocks).size).toBe(3);
    for (const day of blocks) {
      expect(events.filter((e) => e.day === day && e.kind === 'start').map((e) => e.node)).toEqual([
        'step_x',
        'step_y',
      ]);
    }
    // The slots are given back: nothing holds the pipeline's item.
    const items = await u.limits.list();
    expect(items.map((i) => i.pk)).toContain('a#one_at_a_time#kaj:code');
    expect(items.every((i) => Object.keys(i.holders ?? {}).length === 0)).toBe(true);
  });

  it('a run keeps the graph it started with when the deployment changes it', async () => {
    const { events, task } = recorder();
    const x = task('old_x');
    const y = task('old_y');
    const z2 = task('new_z');
    const history = new MemoryHistoryStore();
    const limits = new MemoryLimitStore();
    const before = definePipeline({ name: 'evolving', nodes: { x: node(x), y: node(y, { after: ['x'] }) } });
    const first = drivenKaj(new TaskRegistry([x, y, z2, before]), { history, limits });
    await first.api('POST', '/api/v1/pipelines/evolving/runs', { logical_date: '2026-11-28' });
    // The run starts (records its graph, starts x) on the old code, then the deploy changes the graph.
    await first.drain({ maxDeliveries: 1 });
    const after = definePipeline({ name: 'evolving', nodes: { x: node(x), z: node(z2, { after: ['x'] }) } });
    const second = drivenKaj(new TaskRegistry([x, y, z2, after]), { history, limits }, first.state);
    await second.drain({ advance: (ms) => vi.advanceTimersByTimeAsync(ms) });
    const run = await second.api('GET', '/api/v1/pipelines/evolving/runs/2026-11-28');
    expect(run.json.status).toBe('succeeded');
    expect(run.json.nodes.map((n: any) => n.name)).toEqual(['x', 'y']);
    expect(events.filter((e) => e.kind === 'start').map((e) => e.node)).toEqual(['old_x', 'old_y']);
    // A new run takes the new graph.
    await second.api('POST', '/api/v1/pipelines/evolving/runs', { logical_date: '2026-11-29' });
    await second.drain({ advance: (ms) => vi.advanceTimersByTimeAsync(ms) });
    const next = await second.api('GET', '/api/v1/pipelines/evolving/runs/2026-11-29');
    expect(next.json.nodes.map((n: any) => `${n.name}:${n.state}`)).toEqual(['x:succeeded', 'z:succeeded']);
  });
});
