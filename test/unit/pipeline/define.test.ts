import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { definePipeline, isPipeline, node, pipelinesOf } from '../../../shared/pipeline/define.js';
import { PipelineDefinitionError } from '../../../shared/pipeline/errors.js';
import { defineTask, TaskRegistry } from '../../../shared/task/define.js';
import { TaskDefinitionError } from '../../../shared/task/errors.js';

const a = defineTask({ type: 'node_a', schema: z.strictObject({}), handler: async () => 'a' });
const b = defineTask({
  type: 'node_b',
  schema: z.strictObject({ n: z.number().default(1) }),
  handler: async () => 'b',
});

describe('definePipeline', () => {
  it('is a workflow type of its name, with a declared schedule that never skips a date for an active run', () => {
    const p = definePipeline({
      name: 'daily_two',
      schedule: { cron: '0 2 * * *', timezone: 'Europe/Berlin' },
      maxActiveRuns: 2,
      nodes: { first: node(a), second: node(b, { after: ['first'], payload: { n: 2 } }) },
    });
    expect(isPipeline(p)).toBe(true);
    expect(p.type).toBe('daily_two');
    expect(p.maxActiveRuns).toBe(2);
    expect(p.schedules).toEqual([
      expect.objectContaining({
        name: 'daily_two',
        cron: '0 2 * * *',
        timezone: 'Europe/Berlin',
        overlap: 'allow',
        misfire: 'catch_up',
      }),
    ]);
    expect(p.pipeline.graph.second).toEqual({
      type: 'node_b',
      after: ['first'],
      trigger: 'all_success',
      payload: { n: 2 },
    });
    const identity = p.runIdentity?.(Date.parse('2026-11-29T01:00:00Z'));
    expect(identity).toEqual({
      key: 'daily_two@2026-11-28',
      dataInterval: { start: '2026-11-28T01:00:00.000Z', end: '2026-11-29T01:00:00.000Z' },
    });
  });

  it('catchup false runs only the latest missed time', () => {
    const p = definePipeline({
      name: 'latest_only',
      schedule: { cron: '0 2 * * *', catchup: false },
      nodes: { x: node(a) },
    });
    expect(p.schedules?.[0]?.misfire).toBe('run_once');
  });

  it('refuses at start-up: a cycle, an unknown upstream, a payload its type refuses, a bad zone, a bad maxActiveRuns', () => {
    expect(() =>
      definePipeline({ name: 'loop', nodes: { x: node(a, { after: ['y'] }), y: node(a, { after: ['x'] }) } }),
    ).toThrow(/pipeline "loop": the nodes form a cycle/);
    expect(() => definePipeline({ name: 'lost', nodes: { x: node(a, { after: ['ghost'] }) } })).toThrow(
      'pipeline "lost": node "x" runs after "ghost", which is not a node',
    );
    expect(() =>
      definePipeline({ name: 'bad_payload', nodes: { x: node(b, { payload: { n: 'two' } as never }) } }),
    ).toThrow(/node "x": its payload does not fit type "node_b"/);
    expect(() =>
      definePipeline({
        name: 'nowhere',
        schedule: { cron: '0 2 * * *', timezone: 'Nowhere/City' },
        nodes: { x: node(a) },
      }),
    ).toThrow(PipelineDefinitionError);
    expect(() => definePipeline({ name: 'too_many', maxActiveRuns: 0, nodes: { x: node(a) } })).toThrow(
      /maxActiveRuns/,
    );
  });

  it('the registry refuses a pipeline whose node type is not registered, naming both', () => {
    const p = definePipeline({ name: 'needs_b', nodes: { x: node(a), y: node(b, { after: ['x'] }) } });
    expect(() => new TaskRegistry([a, p])).toThrow(TaskDefinitionError);
    expect(() => new TaskRegistry([a, p])).toThrow(
      'task type "needs_b": needs task type "node_b", which is not registered',
    );
    const registry = new TaskRegistry([a, b, p]);
    expect([...pipelinesOf(registry).keys()]).toEqual(['needs_b']);
  });
});
