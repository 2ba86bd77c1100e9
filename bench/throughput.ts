/**
 * Throughput and cost per task through the whole local stack:
 * HTTP submit → API handler → DynamoDB + SQS → emulated event source → consumer → DynamoDB.
 *
 *   npm run bench -- [--tasks 1000] [--runs 3] [--clients 16]
 *
 * Prints, as the median of the runs: submit rate, end-to-end tasks/s, and per successful task
 * the SQS requests and DynamoDB write requests / write capacity units the emulator reports,
 * counted by SDK middleware on the runtime's own clients.
 */
import { parseArgs } from 'node:util';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
import { RequestCounter } from '../local/request-counter.js';
import { startLocalRuntime } from '../local/runtime.js';
import { METRICS } from '../shared/config/metrics.js';
import type { Metrics } from '../shared/runtime/logger.js';
import { defineTask, TaskRegistry } from '../shared/task/define.js';
import { medianLine, num, repeat } from './lib/report.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
    clients: { type: 'string', default: '16' },
  },
});
const N = num(values.tasks, 'tasks', true, 1);
const RUNS = num(values.runs, 'runs', true, 1);
const CLIENTS = num(values.clients, 'clients', true, 1);

/** The write capacity DynamoDB reports for the client's writes, asked for on each PutItem and UpdateItem. */
function countWcu(client: DynamoDBClient, counted: { wcu: number }): void {
  (client.middlewareStack as unknown as { add: (mw: unknown, o: { step: string; name: string }) => void }).add(
    (next: (a: any) => Promise<any>, ctx: any) => async (args: any) => {
      if (/PutItem|UpdateItem/.test(String(ctx.commandName))) args.input.ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      counted.wcu += out.output?.ConsumedCapacity?.CapacityUnits ?? 0;
      return out;
    },
    { step: 'initialize', name: 'kaj-bench-wcu' },
  );
}

const registry = new TaskRegistry([
  defineTask({ type: 'noop', schema: z.object({ i: z.number() }), handler: async (p) => ({ i: p.i }) }),
]);

async function run(): Promise<Record<string, number>> {
  let succeeded = 0;
  const metrics: Metrics = {
    count: (name, _type, v = 1) => {
      if (name === METRICS.succeeded) succeeded += v;
    },
    durationMs: () => {},
  };
  const rt = await startLocalRuntime({
    registry,
    port: 0,
    prefix: `bench-${process.pid}`,
    metrics,
    waitTimeSeconds: 1,
  });
  const counter = new RequestCounter();
  const counted = { wcu: 0 };
  counter.instrument(rt.clients.sqs, 'sqs');
  counter.instrument(rt.clients.dynamodb, 'dynamodb');
  countWcu(rt.clients.dynamodb, counted);
  try {
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < N) {
          const i = next++;
          const res = await fetch(`${rt.url}/api/v1/tasks`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              type: 'noop',
              payload: { i },
              priority: (['high', 'normal', 'low'] as const)[i % 3],
            }),
          });
          if (res.status !== 202) throw new Error(`submit ${i}: HTTP ${res.status} ${await res.text()}`);
        }
      }),
    );
    const submitted = performance.now();
    while (succeeded < N) {
      if (performance.now() - t0 > 600_000) throw new Error(`only ${succeeded}/${N} succeeded after 10 min`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const done = performance.now();
    // Let the last deletes land before reading the counters.
    await new Promise((r) => setTimeout(r, 300));
    const sum = (re: RegExp) =>
      Object.entries(counter.counts.requests)
        .filter(([k]) => re.test(k))
        .reduce((a, [, v]) => a + v, 0);
    const receives = sum(/sqs:ReceiveMessage/);
    return {
      submitPerSec: N / ((submitted - t0) / 1000),
      tasksPerSec: N / ((done - t0) / 1000),
      sqsRequestsPerTask: sum(/^sqs:/) / N,
      sqsRequestsPerTaskExclReceives: (sum(/^sqs:/) - receives) / N,
      sqsSendsPerTask: sum(/^sqs:SendMessage/) / N,
      sqsDeletesPerTask: sum(/^sqs:DeleteMessage/) / N,
      sqsVisibilityChangesPerTask: sum(/^sqs:ChangeMessageVisibility/) / N,
      dynamoWriteRequestsPerTask: sum(/dynamodb:(PutItem|UpdateItem)/) / N,
      dynamoReadRequestsPerTask: sum(/dynamodb:(GetItem|Query)/) / N,
      dynamoWcuPerTask: counted.wcu / N,
    };
  } finally {
    await rt.stop(5_000);
  }
}

const results = await repeat(RUNS, async (r) => {
  const res = await run();
  process.stderr.write(`run ${r}/${RUNS}: ${res.tasksPerSec?.toFixed(1)} tasks/s\n`);
  return res;
});
console.log(
  `\nKaj local throughput: ${N} no-op tasks, ${CLIENTS} HTTP clients, median of ${RUNS} runs (${new Date().toISOString()})`,
);
for (const key of Object.keys(results[0] ?? {})) {
  console.log(
    medianLine(
      `${key.padEnd(32)} `,
      results.map((r) => r[key] ?? NaN),
      10,
    ),
  );
}
