/**
 * What a workflow step costs: the history writes and reads per step, sleep and wake (write units
 * by DynamoDB's item-size rules, on the items the history table's adapter writes), the increments
 * in dollars per million, and the CPU of replaying a run's recorded steps.
 *
 *   npm run bench:workflows [-- --runs 3 --steps 100 --children 10000]
 *
 * The runs execute Kaj's workflow runner (`shared/workflow/runner.ts`) over the contract-tested
 * in-memory history (`testing/memory-history-store.ts`); an invocation's task-table and SQS
 * requests are those of a task (`npm run bench:cost`) plus what this bench prints.
 *
 * @module
 */
import { parseArgs } from 'node:util';
import * as z from 'zod';
import { defineWorkflow, type WorkflowContext } from '../shared/workflow/define.js';
import type { HistoryStore } from '../shared/workflow/history-store.js';
import { MeteredHistory } from './lib/history-accounting.js';
import type { WorkflowOutcome } from '../shared/workflow/runner.js';
import { MemoryHistoryStore } from '../testing/memory-history-store.js';
import { MemoryTaskStore } from '../testing/memory-task-store.js';
import { lambdaContext, lambdaSqsRecord, QUEUE_NAMES, sqsEvent, unitKaj } from '../testing/fixtures.js';
import { PRIORITIES, TABLE_SCHEMA } from '../shared/config/resources.js';
import { defineTask, TaskRegistry } from '../shared/task/define.js';
import { readDeployment } from './lib/deployment.js';
import { invokeWorkflow } from '../testing/workflow-runs.js';
import { AccountingTaskStore, DynamoLedger, summarize } from './lib/dynamo-accounting.js';
import { fmt, median, num, printTable, repeat, usd } from './lib/report.js';
import { PRICES } from './prices.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '3' },
    steps: { type: 'string', default: '100' },
    children: { type: 'string', default: '10000' },
  },
});
const RUNS = num(values.runs, 'runs', true, 1);
const STEPS = num(values.steps, 'steps', true, 1);
const CHILDREN = num(values.children, 'children', true, 1);
const T0 = Date.UTC(2026, 10, 28, 9, 0, 0);

/** Invokes `run` until it completes, advancing the clock to each wake; counts invocations. */
async function complete(
  history: HistoryStore,
  run: (input: unknown, wf: WorkflowContext) => Promise<unknown>,
  runId: string,
): Promise<{ invocations: number; outcome: WorkflowOutcome }> {
  const def = defineWorkflow({ type: 'bench_flow', schema: z.unknown(), timeoutSeconds: 10, run });
  let now = T0;
  for (let invocations = 1; ; invocations += 1) {
    const outcome = await invokeWorkflow(def, { history, now: () => now, runId, createdAt: T0 });
    if (outcome.kind !== 'suspended') return { invocations, outcome };
    now = Math.max(now, outcome.wakeAt);
  }
}

/** A result of about 100 bytes, as a step returning an id and a few fields would. */
const result = (i: number) => ({ id: `res-${i}-0123456789abcdef`, status: 'ok', amount: 1234.5, at: T0 + i });

const order = async (_: unknown, wf: WorkflowContext) => {
  for (const s of ['reserve_stock', 'charge_payment', 'make_invoice', 'send_email'])
    await wf.step(s, async () => result(s.length));
  return 'done';
};
const orderWithSleep = async (_: unknown, wf: WorkflowContext) => {
  await wf.step('reserve_stock', async () => result(1));
  await wf.sleep('cool_off', '1h');
  await wf.step('send_email', async () => result(2));
  return 'done';
};

console.log(`Workflow history costs (AWS's write/read unit rules on the adapter's items; runs: ${RUNS})\n`);
const shapes = [
  { name: 'order: 4 steps', run: order },
  { name: 'order: 2 steps + 1 sleep', run: orderWithSleep },
];
const rows: string[][] = [];
for (const shape of shapes) {
  const h = new MeteredHistory();
  const { invocations } = await complete(h, shape.run, 't_00000000000000000000000000000001');
  const usdPerMillion =
    (h.writeUnits * PRICES.dynamodb.writeRequestUnit.usd) / (PRICES.dynamodb.writeRequestUnit.per / 1_000_000) +
    (h.readUnits * PRICES.dynamodb.readRequestUnit.usd) / (PRICES.dynamodb.readRequestUnit.per / 1_000_000);
  rows.push([
    shape.name,
    String(invocations),
    String(h.writes),
    fmt(h.writeUnits),
    String(h.queries),
    fmt(h.readUnits),
    usd(usdPerMillion),
  ]);
}
printTable(
  ['run', 'invocations', 'history writes', 'history WRU', 'queries', 'RRU', '$ history / M runs'],
  rows,
  [26, 12, 15, 13, 8, 6, 19],
);

console.log(`\nReplay CPU: one invocation of a run whose ${STEPS} steps are all recorded (medians of ${RUNS} runs)\n`);
const replay = await repeat(RUNS, async (r) => {
  const h = new MemoryHistoryStore();
  const flow = async (_: unknown, wf: WorkflowContext) => {
    for (let i = 0; i < STEPS; i += 1) await wf.step(`step_${i}`, async () => result(i));
    return 'done';
  };
  const runId = `t_${String(r).padStart(32, '0')}`;
  await complete(h, flow, runId); // records every step
  const rounds = 50;
  await complete(h, flow, runId); // warm
  const start = process.cpuUsage();
  for (let i = 0; i < rounds; i += 1) await complete(h, flow, runId);
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / rounds;
});
printTable(
  ['replayed steps', 'CPU ms per replay', 'runs'],
  [[String(STEPS), fmt(median(replay), 3), replay.map((v) => fmt(v, 3)).join(', ')]],
  [16, 18, 30],
);

console.log(
  `\nFan-out: one run starts ${CHILDREN.toLocaleString('en-US')} children at once (Promise.all over wf.run) and sums their results`,
);
console.log(
  '(in process: memory stores and queue, one consumer taking batches of 10; write units by AWS rules on the task table as deployed)\n',
);
const leaf = defineTask({ type: 'leaf', schema: z.object({ i: z.number() }), handler: async (p) => ({ i: p.i }) });
const fan = defineWorkflow({
  type: 'fan',
  schema: z.object({ n: z.number() }),
  timeoutSeconds: 60,
  run: async (p, wf) => {
    const all = await Promise.all(Array.from({ length: p.n }, (_, i) => wf.run(leaf, { i }, { name: `leaf_${i}` })));
    return wf.step('sum', () => all.reduce((s, r) => s + r.i, 0));
  },
});
const deployment = await readDeployment();
/** One fan-out run: its counts (the same every time) and its wall time. */
async function fanOut() {
  const memory = new MemoryTaskStore();
  const ledger = new DynamoLedger();
  const store = new AccountingTaskStore(memory, deployment.table, ledger, TABLE_SCHEMA.outboxIndex.name);
  const history = new MeteredHistory();
  const u = unitKaj(new TaskRegistry([leaf, fan]), undefined, undefined, { store, history });
  const started = performance.now();
  const parent = await u.kaj.submitter.submit({ type: 'fan', payload: { n: CHILDREN } }, { owner: 'bench' });
  let batches = 0;
  for (let got = 1; got > 0; ) {
    got = 0;
    for (const p of PRIORITIES) {
      const msgs = u.queue.receive(p, { max: 10, visibilitySeconds: 300 });
      got += msgs.length;
      if (msgs.length === 0) continue;
      batches += 1;
      const arn = `arn:aws:sqs:us-east-1:000000000000:${QUEUE_NAMES[p]}`;
      const event = sqsEvent(
        ...msgs.map((m) => lambdaSqsRecord({ messageId: m.receiptHandle, eventSourceARN: arn, ...m })),
      );
      const res = await u.kaj.processBatch(event, lambdaContext());
      const kept = new Set(res.batchItemFailures.map((f) => f.itemIdentifier));
      for (const m of msgs) if (!kept.has(m.receiptHandle)) u.queue.deleteMessage(p, m.receiptHandle);
    }
  }
  const wallS = (performance.now() - started) / 1000;
  const done = await memory.get(parent.record.task_id);
  const expected = (CHILDREN * (CHILDREN - 1)) / 2;
  if (done?.status !== 'succeeded' || done.result !== expected) {
    throw new Error(`the fan-out run ended ${done?.status} with ${JSON.stringify(done?.result)}, not ${expected}`);
  }
  const d = summarize(ledger.ops);
  const tasks = { writes: d.requests.PutItem + d.requests.UpdateItem, writeUnits: d.tableWru + d.indexWru };
  return { tasks, history, batches, wallS };
}
const fans = await repeat(RUNS, () => fanOut());
const { tasks, history, batches } = fans[0] as Awaited<ReturnType<typeof fanOut>>;
const walls = fans.map((f) => f.wallS);
const perChild = (n: number) => fmt(n / CHILDREN, 2);
printTable(
  [
    'children',
    'run invocations',
    'history writes/child',
    'history WRU/child',
    'task writes/child',
    'task WRU/child',
    'batches',
    `wall s, median of ${RUNS}`,
  ],
  [
    [
      CHILDREN.toLocaleString('en-US'),
      String(history.queries),
      perChild(history.writes),
      perChild(history.writeUnits),
      perChild(tasks.writes),
      perChild(tasks.writeUnits),
      String(batches),
      `${fmt(median(walls), 1)} (${walls.map((w) => fmt(w, 1)).join(', ')})`,
    ],
  ],
  [10, 16, 21, 18, 18, 15, 8, 20],
);
console.log(
  `\nThe run was invoked ${history.queries} times: once to start the children, once when the last of them ended` +
    `${history.queries > 2 ? ' (and again for children that ended while it was still starting the others: their wake request)' : ''}.`,
);
