import { describe, expect, it } from 'vitest';
import {
  checkGraph,
  decide,
  downstreamOf,
  findCycle,
  type Graph,
  type NodeState,
  runStateOf,
  settle,
  type TriggerRule,
} from '../../../shared/pipeline/graph.js';
import { PipelineDefinitionError } from '../../../shared/pipeline/errors.js';

function graph(edges: Record<string, string[]>, triggers: Record<string, TriggerRule> = {}): Graph {
  return Object.fromEntries(
    Object.entries(edges).map(([n, after]) => [
      n,
      { type: 't', after, trigger: triggers[n] ?? 'all_success', payload: {} },
    ]),
  );
}

const NIGHTLY = graph({
  extract: [],
  clean: ['extract'],
  customers: [],
  summary: ['clean', 'customers'],
  dashboard: ['summary'],
});

describe('checkGraph', () => {
  it('orders the nodes upstreams first, otherwise in declaration order', () => {
    expect(checkGraph('p', NIGHTLY)).toEqual(['extract', 'clean', 'customers', 'summary', 'dashboard']);
    expect(checkGraph('p', graph({ late: ['early'], early: [] }))).toEqual(['early', 'late']);
  });

  it('refuses a cycle, naming its nodes', () => {
    const cyclic = graph({ a: ['c'], b: ['a'], c: ['b'], d: [] });
    expect(() => checkGraph('p', cyclic)).toThrow(PipelineDefinitionError);
    expect(() => checkGraph('p', cyclic)).toThrow(/pipeline "p": the nodes form a cycle: (a|b|c) → .* → \1/);
    expect(findCycle(cyclic)).toHaveLength(4);
    expect(findCycle(NIGHTLY)).toEqual([]);
  });

  it('refuses an unknown upstream, a node after itself, a name twice, a bad name, a bad rule and no nodes', () => {
    expect(() => checkGraph('p', graph({ a: ['nope'] }))).toThrow('node "a" runs after "nope", which is not a node');
    expect(() => checkGraph('p', graph({ a: ['a'] }))).toThrow('node "a" runs after itself');
    expect(() => checkGraph('p', graph({ a: [], b: ['a', 'a'] }))).toThrow('names "a" twice');
    expect(() => checkGraph('p', graph({ 'Bad-Name': [] }))).toThrow('node name "Bad-Name"');
    expect(() => checkGraph('p', graph({ a: [] }, { a: 'sometimes' as TriggerRule }))).toThrow(
      'trigger must be one of',
    );
    expect(() => checkGraph('p', {})).toThrow('has no nodes');
  });

  it('downstreamOf: every node that depends on one, directly or not', () => {
    expect(downstreamOf(NIGHTLY, 'extract')).toEqual(['clean', 'summary', 'dashboard']);
    expect(downstreamOf(NIGHTLY, 'customers')).toEqual(['summary', 'dashboard']);
    expect(downstreamOf(NIGHTLY, 'dashboard')).toEqual([]);
  });
});

describe('decide: the trigger rules once every upstream has ended', () => {
  const cases: [TriggerRule, NodeState[], ReturnType<typeof decide>][] = [
    ['all_success', [], 'run'],
    ['all_success', ['succeeded', 'succeeded'], 'run'],
    ['all_success', ['succeeded', 'failed'], 'upstream_failed'],
    ['all_success', ['upstream_failed'], 'upstream_failed'],
    ['all_success', ['succeeded', 'skipped'], 'skipped'],
    ['all_done', ['failed', 'skipped', 'upstream_failed'], 'run'],
    ['one_failed', ['succeeded', 'failed'], 'run'],
    ['one_failed', ['upstream_failed'], 'run'],
    ['one_failed', ['succeeded', 'skipped'], 'skipped'],
    ['none_failed', ['succeeded', 'skipped'], 'run'],
    ['none_failed', ['succeeded', 'failed'], 'upstream_failed'],
  ];
  it.each(cases)('%s over %j → %s', (rule, ups, expected) => {
    expect(decide(rule, ups)).toBe(expected);
  });
});

describe('settle and the run state', () => {
  it('a failure: downstream upstream_failed in one pass, the run failed', () => {
    const states = new Map<string, NodeState>([
      ['extract', 'failed'],
      ['customers', 'succeeded'],
    ]);
    const { ready } = settle(NIGHTLY, checkGraph('p', NIGHTLY), states);
    expect(ready).toEqual([]);
    expect(Object.fromEntries(states)).toMatchObject({
      clean: 'upstream_failed',
      summary: 'upstream_failed',
      dashboard: 'upstream_failed',
    });
    expect(runStateOf(states)).toBe('failed');
  });

  it('a leaf with all_done that runs after a failure does not make the run succeed', () => {
    const g = graph({ a: [], b: ['a'], notify: ['b'] }, { notify: 'all_done' });
    const states = new Map<string, NodeState>([['a', 'failed']]);
    expect(settle(g, checkGraph('p', g), states).ready).toEqual(['notify']);
    states.set('notify', 'succeeded');
    expect(runStateOf(states)).toBe('failed');
  });

  it('skipped nodes are not failures; ready nodes are those whose upstreams all ended', () => {
    const g = graph({ a: [], on_failure: ['a'], b: ['a'] }, { on_failure: 'one_failed' });
    const states = new Map<string, NodeState>();
    expect(settle(g, checkGraph('p', g), states).ready).toEqual(['a']);
    states.set('a', 'succeeded');
    expect(settle(g, checkGraph('p', g), states).ready).toEqual(['b']);
    expect(states.get('on_failure')).toBe('skipped');
    states.set('b', 'succeeded');
    expect(runStateOf(states)).toBe('succeeded');
  });
});
