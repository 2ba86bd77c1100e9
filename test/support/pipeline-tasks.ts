/**
 * Pipelines for the pipeline suites (test/integration/pipelines/), loadable by `local/worker.ts`
 * (`--registry-module test/support/pipeline-tasks.ts`) as well as in-process: the example
 * `nightly_sales` with its node types, and test pipelines whose nodes are one task type,
 * `pl_probe`, that logs its start and end, sleeps a seeded random time, and fails or waits while
 * a flag file says so.
 *
 * Configured through the environment the test passes to its workers:
 * - `KAJ_PIPELINE_LOG`: the node log, one line per start (`S`), end (`E`) and failure (`F`):
 *   `S|E|F <node> <logical date> <task id> <attempt> <pid> <epoch ms>`, appended synchronously
 *   (O_APPEND), so a line written before a SIGKILL is there after it;
 * - `KAJ_PIPELINE_FLAGS`: the folder of flag files (see {@link flagName}): `fail-<node>-<date>`
 *   makes the node of that date fail for good, `hold-<node>-<date>` keeps it waiting until the file
 *   is gone;
 * - `KAJ_PIPELINE_SEED`: the seed of the nodes' durations (each from 0 to the node's `max_ms`);
 * - `KAJ_PIPELINE_GRAPH`: `a` (default) or `b`, the graph of `pl_evolving` (a deploy that changed it);
 * - `KAJ_PIPELINE_DIE`: `before:<history key>` or `after:<history key>` SIGKILLs the worker right
 *   before (or after) it writes that entry of a run's history — `after:child#first` kills it once
 *   node `first`'s end is recorded and before its run is woken — once: the kill first creates the
 *   file `KAJ_PIPELINE_DIE_MARK` (required), and no worker dies while that file exists.
 *
 * @module
 */
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { HISTORY_TABLE_SCHEMA } from '../../shared/config/resources.js';
import { definePipeline, node, type PipelineNode } from '../../shared/pipeline/define.js';
import { defineTask, PermanentError, TaskRegistry } from '../../shared/task/define.js';
import { nightlySales, nightlySalesTasks } from '../../tasks/nightly-sales.js';
import { abortableSleep } from '../../testing/wait.js';
import { readLogFields } from '../../testing/worker-tasks.js';

/** This module, from the repository root (what a worker is given as `--registry-module`). */
export const PIPELINE_TASKS_MODULE = 'test/support/pipeline-tasks.ts';

/** How often a held node looks at its flag. */
const FLAG_POLL_MS = 50;

/** The name of the flag file that makes `node` of the run of `date` fail or wait. */
export function flagName(kind: 'fail' | 'hold', nodeName: string, date: string): string {
  return `${kind}-${nodeName}-${date}`;
}

/** A number in [0, 1) from a text: FNV-1a, so a seed gives every node of every date its own duration. */
export function seeded(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) / 2 ** 32;
}

/** One line of the node log. */
export interface NodeEvent {
  readonly event: 'S' | 'E' | 'F';
  readonly node: string;
  readonly date: string;
  readonly taskId: string;
  readonly attempt: number;
  readonly pid: number;
  /** Epoch ms. */
  readonly at: number;
}

/** Reads the node log (a missing file: no lines; a torn last line is skipped). */
export function readNodeLog(path: string): NodeEvent[] {
  const out: NodeEvent[] = [];
  for (const [event, nodeName, date, taskId, attempt, pid, at] of readLogFields(path)) {
    if ((event !== 'S' && event !== 'E' && event !== 'F') || !nodeName || !date || !taskId || !at) continue;
    out.push({ event, node: nodeName, date, taskId, attempt: Number(attempt), pid: Number(pid), at: Number(at) });
  }
  return out;
}

export const probe = defineTask({
  type: 'pl_probe',
  description:
    'A node of the test pipelines: logs its start and end, waits while its hold flag exists, sleeps a seeded time up to `max_ms`, fails while its fail flag exists',
  schema: z.strictObject({ node: z.string().min(1), max_ms: z.number().int().min(0).max(5_000).default(0) }),
  maxAttempts: 1,
  timeoutSeconds: 60,
  handler: async (p, ctx) => {
    const date = ctx.logicalDate?.toISOString().slice(0, 10) ?? 'none';
    const log = (event: NodeEvent['event']) => {
      const path = process.env.KAJ_PIPELINE_LOG;
      if (path)
        appendFileSync(path, `${event} ${p.node} ${date} ${ctx.taskId} ${ctx.attempt} ${process.pid} ${Date.now()}\n`);
    };
    const flags = process.env.KAJ_PIPELINE_FLAGS;
    const flagged = (kind: 'fail' | 'hold') =>
      flags !== undefined && existsSync(join(flags, flagName(kind, p.node, date)));
    log('S');
    while (flagged('hold')) await abortableSleep(FLAG_POLL_MS, ctx.signal);
    const ms = Math.floor(seeded(`${process.env.KAJ_PIPELINE_SEED ?? ''}:${date}:${p.node}`) * p.max_ms);
    if (ms > 0) await abortableSleep(ms, ctx.signal);
    if (flagged('fail')) {
      log('F');
      throw new PermanentError(`node ${p.node} of ${date} was told to fail`);
    }
    log('E');
    return { node: p.node, date, ms };
  },
});

/** A node of `pl_probe` named `name`, after `after`. */
function probeNode(name: string, after: readonly string[] = [], maxMs = 0) {
  return node(probe, { after, payload: { node: name, max_ms: maxMs } });
}

/** The longest a `pl_diamond` node sleeps. */
export const DIAMOND_MAX_MS = 300;

/** Two roots, fan-out, fan-in: a → b, c, d; b, c → e; d, e, f → g → h. */
export const diamond = definePipeline({
  name: 'pl_diamond',
  nodes: {
    a: probeNode('a', [], DIAMOND_MAX_MS),
    b: probeNode('b', ['a'], DIAMOND_MAX_MS),
    c: probeNode('c', ['a'], DIAMOND_MAX_MS),
    d: probeNode('d', ['a'], DIAMOND_MAX_MS),
    e: probeNode('e', ['b', 'c'], DIAMOND_MAX_MS),
    f: probeNode('f', [], DIAMOND_MAX_MS),
    g: probeNode('g', ['d', 'e', 'f'], DIAMOND_MAX_MS),
    h: probeNode('h', ['g'], DIAMOND_MAX_MS),
  },
});

/** Mondays at 06:00 UTC: no run on any other date. */
export const weekly = definePipeline({
  name: 'pl_weekly',
  schedule: { cron: '0 6 * * 1', timezone: 'UTC' },
  nodes: { only: probeNode('only') },
});

/** One node after another: while `first` runs, nothing else of the run can wake it. */
export const chain = definePipeline({
  name: 'pl_chain',
  nodes: { first: probeNode('first'), second: probeNode('second', ['first']), third: probeNode('third', ['second']) },
});

/** Two roots that end at once, and their join: the second end often lands while the first's wake runs the run. */
export const pair = definePipeline({
  name: 'pl_pair',
  nodes: { x: probeNode('x'), y: probeNode('y'), z: probeNode('z', ['x', 'y']) },
});

/** The graph of `pl_evolving` before (`a`) and after (`b`) a deploy: `right` removed, `extra` added. */
export function evolving(graph: 'a' | 'b') {
  const nodes: Record<string, PipelineNode> =
    graph === 'a'
      ? { gate: probeNode('gate'), left: probeNode('left', ['gate']), right: probeNode('right', ['gate']) }
      : { gate: probeNode('gate'), left: probeNode('left', ['gate']), extra: probeNode('extra', ['left']) };
  return definePipeline({ name: 'pl_evolving', nodes });
}

/** Arms `KAJ_PIPELINE_DIE` in this process (see the module's doc). */
function armDeath(spec: string, mark: string | undefined): void {
  const m = /^(before|after):(.+)$/.exec(spec);
  if (m === null || mark === undefined)
    throw new Error('KAJ_PIPELINE_DIE needs before|after:<key> and KAJ_PIPELINE_DIE_MARK');
  const [, when, key] = m;
  const die = () => {
    writeFileSync(mark, `${spec} ${process.pid}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
  const send = DynamoDBClient.prototype.send as (this: DynamoDBClient, ...args: unknown[]) => Promise<unknown>;
  const patched = async function (this: DynamoDBClient, ...args: unknown[]): Promise<unknown> {
    const input = (args[0] as { input?: { Item?: Record<string, { S?: string }> } } | undefined)?.input;
    const hit = input?.Item?.[HISTORY_TABLE_SCHEMA.sortKey]?.S === key && !existsSync(mark);
    if (hit && when === 'before') die();
    const out = await send.apply(this, args);
    if (hit && when === 'after') die();
    return out;
  };
  DynamoDBClient.prototype.send = patched as typeof DynamoDBClient.prototype.send;
}

/** The registry. Exported as the factory `local/worker.ts` looks for. */
export function createRegistry(o: { graph?: 'a' | 'b' } = {}): TaskRegistry {
  const die = process.env.KAJ_PIPELINE_DIE;
  if (die) armDeath(die, process.env.KAJ_PIPELINE_DIE_MARK);
  const graph = o.graph ?? (process.env.KAJ_PIPELINE_GRAPH === 'b' ? 'b' : 'a');
  return new TaskRegistry([...nightlySalesTasks, nightlySales, probe, diamond, weekly, chain, pair, evolving(graph)]);
}
