/**
 * The payroll run on the real local runtime:
 *
 *   npm run bench:payroll -- [--slips 2000] [--configs seed,kaj] [--runs 3] [--kills 10]
 *                            [--time-scale 1] [--jitter MS] [--lease 10] [--timeline]
 *
 * `--slips` salary slips: each a `render_slip` task (cpu lane, 0.8 s, holds a `database`
 * connection) that submits a `send_slip` task (io lane, `email_provider`) through Kaj's API with
 * the idempotency key `slip:2026-11:emp-N`, sent to a simulated provider in a process of its own
 * that takes 1.2 s and answers 429 beyond 40 emails in any sliding second
 * (bench/payroll/email-provider.ts). Two workers, each a process of its own (`local/worker.ts`), the
 * limits holding across them through the limits table. `--time-scale N` stretches time N times (rate
 * 40/N, durations × N, every ratio kept) for machines where the emulators cannot carry the real
 * rate; `--jitter MS` declares the rate with `arrivalJitterMs: MS` instead of 25.
 *
 * Per configuration (`seed`: email concurrency 45; `kaj`: rate 40/s + concurrency 50), per run and
 * as the median of the runs: makespan against the floor (slips ÷ the binding rate), 429s, peaks,
 * duplicate emails, replays absorbed, failed and lost tasks, deferrals, and AWS requests per slip
 * (every process's SDK calls). `--kills N` adds a `kaj` run in which a worker is SIGKILLed N times
 * and restarted; `--timeline` prints a line a second (emails, queues, slots held, kills).
 *
 * @module
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GetQueueAttributesCommand, ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, paginateScan } from '@aws-sdk/lib-dynamodb';
import { laneQueueUrlsOf } from '../shared/aws/wiring.js';
import { startLocalRuntime } from '../local/runtime.js';
import { type RequestCounts, RequestCounter } from '../local/request-counter.js';
import { PRIORITIES } from '../shared/config/resources.js';
import { SHARED_CRASHES_BEFORE_SOLO } from '../shared/task/lease.js';
import { spawnProvider } from './payroll/email-provider.js';
import { createRegistry, type PayrollConfig } from './payroll/tasks.js';
import { median } from './lib/report.js';
import { uniquePrefix } from '../testing/wait.js';
import { buildWorkerBundle, WORKER_BUNDLE_ENV } from '../testing/worker-bundle.js';
import { spawnWorker, type WorkerProcess, waitWorkerReady } from '../testing/worker-process.js';

/** The registry module the workers load (`createRegistry`, configured by the environment). */
const PAYROLL_REGISTRY_MODULE = 'bench/payroll/tasks.ts';
const WORKERS = 2;

/** The payroll's real figures; `--time-scale N` divides the rate and multiplies the durations by N. */
let RATE_PER_SECOND = 40;
let EMAIL_MS = 1200;
let RENDER_MS = 800;
/** The binding rate of each configuration: 45 / 1.2 s, and the provider's 40/s. */
const bindingRate = (config: PayrollConfig): number => (config === 'seed' ? 45 / (EMAIL_MS / 1000) : RATE_PER_SECOND);

/**
 * One run's figures: `firstEmailS`, from the first submit to the provider's first accepted email;
 * `letters`, up to 10 DLQ messages with their receive counts; `stories`, up to 10 tasks that did
 * not succeed, as their records tell it; `settledS`, until no task was left unfinished;
 * `sharedCrashes` / `suspects`, crashed attempts of tasks that ran beside others, and tasks that
 * then ran alone; `lateStarts`, rate starts the limiters forfeited; `gateClosedS`, worker-seconds
 * with no new task started (draining for a suspect, then running it alone).
 */
type RunResult = Awaited<ReturnType<typeof runOnce>>;

function args() {
  const { values } = parseArgs({
    options: {
      slips: { type: 'string', default: '2000' },
      configs: { type: 'string', default: 'seed,kaj' },
      runs: { type: 'string', default: '3' },
      kills: { type: 'string', default: '0' },
      'time-scale': { type: 'string', default: '1' },
      jitter: { type: 'string' },
      lease: { type: 'string', default: '10' },
      timeline: { type: 'boolean', default: false },
    },
  });
  const configs = (values.configs ?? '').split(',').filter((c): c is PayrollConfig => c === 'seed' || c === 'kaj');
  return {
    slips: Number(values.slips),
    configs,
    runs: Number(values.runs),
    kills: Number(values.kills),
    timeScale: Number(values['time-scale']),
    jitter: values.jitter,
    lease: Number(values.lease),
    timeline: values.timeline === true,
  };
}

/** Spawns a worker with the payroll's task types and waits until it is ready. */
async function startWorker(o: {
  label: string;
  rt: Awaited<ReturnType<typeof startLocalRuntime>>;
  env: Record<string, string>;
  lease: number;
  countsFile: string;
}): Promise<WorkerProcess> {
  const worker = spawnWorker({
    label: o.label,
    endpoints: o.rt.endpoints,
    prefix: o.rt.resources.prefix,
    lease: o.lease,
    registryModule: PAYROLL_REGISTRY_MODULE,
    args: [
      '--registry-export',
      'createRegistry',
      '--wait-seconds',
      '1',
      '--grace-seconds',
      '5',
      '--log-level',
      'error',
      '--counts-file',
      o.countsFile,
    ],
    env: o.env,
  });
  await waitWorkerReady(worker);
  return worker;
}

/**
 * One line of `--timeline`: emails accepted so far, then for the normal queues of the io (emails)
 * and cpu (renders) lanes visible/in-flight messages, and for the two concurrency limits the
 * slots held (live + lapsed, not yet cleaned up): where the time of a run goes.
 */
async function lookAt(
  rt: Awaited<ReturnType<typeof startLocalRuntime>>,
  doc: DynamoDBDocumentClient,
  sent: number,
  atS: number,
): Promise<string> {
  const lanes = laneQueueUrlsOf(rt.resources);
  const depth = async (url: string | undefined) => {
    const a = await rt.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return `${a.Attributes?.ApproximateNumberOfMessages}/${a.Attributes?.ApproximateNumberOfMessagesNotVisible}`;
  };
  const slots = async (pk: string) => {
    const r = await doc.send(new GetCommand({ TableName: rt.resources.limitsTableName, Key: { pk } }));
    const until = Object.values((r.Item?.holders ?? {}) as Record<string, number>);
    const now = Date.now();
    return `${until.filter((t) => t > now).length}+${until.filter((t) => t <= now).length}`;
  };
  return (
    `    +${atS.toFixed(1)} s: sent ${sent} | emails ${await depth(lanes.io?.normal)} renders ${await depth(lanes.cpu?.normal)}` +
    ` | slots email ${await slots('c#email_provider')} database ${await slots('c#database')}`
  );
}

function addCounts(into: RequestCounts, from: RequestCounts): void {
  for (const k of ['requests', 'failed', 'metrics'] as const) {
    for (const [name, n] of Object.entries(from[k])) into[k][name] = (into[k][name] ?? 0) + n;
  }
}

/** One run; its line is printed as soon as it is measured, before the runtime stops. */
async function runOnce(config: PayrollConfig, o: ReturnType<typeof args>, kills: number, label: string) {
  const provider = await spawnProvider({ perSecond: RATE_PER_SECOND, latencyMs: EMAIL_MS });
  const dir = mkdtempSync(join(tmpdir(), 'kaj-payroll-'));
  const env = {
    PAYROLL_CONFIG: config,
    PAYROLL_PROVIDER: provider.url,
    PAYROLL_RENDER_MS: String(RENDER_MS),
    PAYROLL_TIME_SCALE: String(o.timeScale),
    PAYROLL_JITTER_MS: o.jitter ?? '',
    PAYROLL_API: '',
  };
  const registry = createRegistry(env);
  const rt = await startLocalRuntime({
    registry,
    prefix: uniquePrefix('payroll'),
    port: 0,
    consumers: false,
    scheduler: false,
    settings: { leaseSeconds: o.lease },
    waitTimeSeconds: 1,
  });
  env.PAYROLL_API = rt.url;
  const apiCounter = new RequestCounter();
  apiCounter.instrument(rt.clients.sqs, 'sqs');
  apiCounter.instrument(rt.clients.dynamodb, 'dynamodb');
  let seq = 0;
  const files: string[] = [];
  const spawnOne = () => {
    seq += 1;
    const file = join(dir, `w${seq}.json`);
    files.push(file);
    return startWorker({ label: `w${seq}`, rt, env, lease: o.lease, countsFile: file });
  };
  const workers = await Promise.all(Array.from({ length: WORKERS }, () => spawnOne()));

  const doc = DynamoDBDocumentClient.from(rt.clients.dynamodb);
  const started = Date.now();
  const timeline: string[] = [];
  const submitting = (async () => {
    for (let i = 0; i < o.slips; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, o.slips - i) }, (_, j) =>
          rt.kaj.submitter.submit(
            {
              type: 'render_slip',
              payload: { emp: i + j },
              priority: 'normal',
              idempotency_key: `render:2026-11:emp-${i + j}`,
            },
            { owner: 'payroll' },
          ),
        ),
      );
    }
  })();

  // Kills: evenly over the expected run, one worker at a time, restarted at once.
  const floorS = o.slips / bindingRate(config);
  let killed = 0;
  const killer = (async () => {
    for (let k = 0; k < kills; k += 1) {
      await new Promise((r) => setTimeout(r, (floorS * 1000) / (kills + 1)));
      const victim = Math.floor(Math.random() * workers.length);
      const w = workers[victim] as WorkerProcess;
      w.kill('SIGKILL');
      await w.exited;
      killed += 1;
      if (o.timeline) timeline.push(`    +${((Date.now() - started) / 1000).toFixed(1)} s: ${w.label} killed`);
      workers[victim] = await spawnOne();
    }
  })();

  await submitting;
  // A kill run waits longer: what matters there is that every slip gets through, and when.
  const limitMs = (kills > 0 ? floorS * 10 + 300 : floorS * 4 + 120) * 1000;
  let lastLook = 0;
  for (;;) {
    const p = await provider.report();
    if (o.timeline && Date.now() - lastLook >= 1000) {
      lastLook = Date.now();
      timeline.push(await lookAt(rt, doc, p.sent, (lastLook - started) / 1000));
    }
    if (p.sent >= o.slips && killed >= kills) break;
    if (Date.now() - started > limitMs) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  await killer;
  if (o.timeline) process.stdout.write(`  timeline (${label}):\n${timeline.join('\n')}\n`);
  const p = await provider.report();
  const makespanS = ((p.lastAt ?? Date.now()) + EMAIL_MS - started) / 1000;
  // Every email accepted is not every task finished: a task whose worker died after its email
  // was accepted runs again (the provider absorbs the replay). Wait for the outcomes to land.
  const unfinishedNow = async (): Promise<number> => {
    let n = 0;
    for await (const page of paginateScan(
      { client: doc },
      {
        TableName: rt.resources.tableName,
        Select: 'COUNT',
        FilterExpression: 'NOT (#s IN (:ok, :failed, :cancelled))',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':ok': 'succeeded', ':failed': 'failed', ':cancelled': 'cancelled' },
      },
    ))
      n += page.Count ?? 0;
    return n;
  };
  await new Promise((r) => setTimeout(r, EMAIL_MS + 1500));
  while (Date.now() - started < limitMs && (await unfinishedNow()) > 0) await new Promise((r) => setTimeout(r, 2000));
  const settledS = (Date.now() - started) / 1000;
  for (const w of workers) w.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));

  const counts: RequestCounts = { requests: {}, failed: {}, metrics: {} };
  let lateStarts = 0;
  let gateClosedMs = 0;
  let ranAlone = 0;
  for (const f of files) {
    try {
      const saved = JSON.parse(readFileSync(f, 'utf8')) as RequestCounts & { gauges?: Record<string, number> };
      addCounts(counts, saved);
      lateStarts += saved.gauges?.limiterLateStarts ?? 0;
      gateClosedMs += saved.gauges?.gateClosedMs ?? 0;
      ranAlone += saved.gauges?.ranAlone ?? 0;
    } catch {
      // A worker killed before its first save: its counts are lost (at most a second's worth).
    }
  }
  addCounts(counts, apiCounter.counts);

  let succeeded = 0;
  let failed = 0;
  const stories: string[] = [];
  let sharedCrashes = 0;
  let suspects = 0;
  for await (const page of paginateScan({ client: doc }, { TableName: rt.resources.tableName })) {
    for (const item of page.Items ?? []) {
      if (item.status === 'succeeded') succeeded += 1;
      if (item.status === 'failed') failed += 1;
      if (item.status !== 'succeeded' && stories.length < 10) stories.push(storyOf(item));
      sharedCrashes += Number(item.unattributed_crashes ?? 0);
      if (Number(item.crashes ?? 0) > 0 || Number(item.unattributed_crashes ?? 0) >= SHARED_CRASHES_BEFORE_SOLO)
        suspects += 1;
    }
  }
  // The dead letters, and why up to 10 of each DLQ are there: their receive count, and the task's state.
  let dlq = 0;
  const letters: string[] = [];
  for (const pr of PRIORITIES) {
    const a = await rt.clients.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: rt.resources.deadLetterQueueUrls[pr],
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    dlq += Number(a.Attributes?.ApproximateNumberOfMessages ?? 0);
    const got = await rt.clients.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: rt.resources.deadLetterQueueUrls[pr],
        MaxNumberOfMessages: 10,
        VisibilityTimeout: 60,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );
    for (const m of got.Messages ?? []) {
      const body = JSON.parse(m.Body ?? '{}') as { task_id?: string; error?: unknown };
      letters.push(
        `receives ${m.Attributes?.ApproximateReceiveCount} task ${body.task_id} ${body.error === undefined ? '(no error: moved by the redrive policy)' : 'dead letter'}`,
      );
    }
  }
  const result = {
    config,
    kills: killed,
    makespanS,
    firstEmailS: ((p.firstAt ?? started) - started) / 1000,
    floorS,
    ratio: makespanS / floorS,
    provider: p,
    succeeded,
    failed,
    lost: 2 * o.slips - succeeded - failed,
    dlq,
    letters,
    stories,
    settledS,
    sharedCrashes,
    suspects,
    deferrals: counts.metrics.LimitDeferrals ?? 0,
    pauses: counts.metrics.LimitPauses ?? 0,
    lateStarts,
    gateClosedS: gateClosedMs / 1000,
    ranAlone,
    requests: counts.requests,
    failedRequests: counts.failed,
  };
  process.stdout.write(`  ${label}: ${line(result, o.slips)}\n`);
  await rt.stop(1000);
  await provider.stop();
  rmSync(dir, { recursive: true, force: true });
  return result;
}

function perSlip(r: RunResult, slips: number) {
  const sum = (re: RegExp, from = r.requests) =>
    Object.entries(from)
      .filter(([k]) => re.test(k))
      .reduce((a, [, n]) => a + n, 0);
  return {
    sqs: sum(/^sqs:/) / slips,
    dynamodbReads: sum(/^dynamodb:(GetItem|Query|Scan)/) / slips,
    dynamodbWrites: sum(/^dynamodb:(PutItem|UpdateItem|DeleteItem)/) / slips,
    limitsTableWrites: sum(/^dynamodb:(PutItem|UpdateItem).*-limits$/) / slips,
    limitsTableRefused: sum(/^dynamodb:(PutItem|UpdateItem).*-limits$/, r.failedRequests) / slips,
    changeVisibility: sum(/^sqs:ChangeMessageVisibility$/) / slips,
  };
}

function line(r: RunResult, slips: number): string {
  const q = perSlip(r, slips);
  const pr = r.provider;
  return [
    `${r.config.padEnd(4)} kills ${String(r.kills).padStart(2)}`,
    `makespan ${r.makespanS.toFixed(1)} s / floor ${r.floorS.toFixed(1)} s = ${r.ratio.toFixed(3)}`,
    `first email +${r.firstEmailS.toFixed(1)} s, steady ${pr.steadyPerSecond.toFixed(2)}/s`,
    `429s ${pr.tooManyRequests}, arrivals over the limit ${pr.arrivalsOverLimit} (peak arrived/1s ${pr.peakArrivalsPerSecond}), starts forfeited late ${r.lateStarts}`,
    `peak in flight ${pr.peakInFlight}`,
    `peak/1s ${pr.peakPerSecond} (starts ${pr.peakStartsPerSecond}; arrival delay median ${pr.arrivalDelayMs.median} ms, max ${pr.arrivalDelayMs.max} ms; provider's loop delay p99 ${pr.loopDelayMs.p99} ms, max ${pr.loopDelayMs.max} ms)`,
    `dup emails ${pr.duplicates} (replays absorbed ${pr.replays})`,
    `all settled +${r.settledS.toFixed(1)} s, shared crashes ${r.sharedCrashes}, suspects ${r.suspects}, ran alone ${r.ranAlone} (workers closed for them ${r.gateClosedS.toFixed(1)} s)`,
    `succeeded ${r.succeeded}/${2 * slips} failed ${r.failed} lost ${r.lost} dlq ${r.dlq}${r.dlq > 0 ? ` (letters: ${r.letters.slice(0, 5).join('; ')})` : ''}${r.stories.length > 0 ? ` (not succeeded: ${r.stories.join('; ')})` : ''}`,
    `deferrals ${(r.deferrals / slips).toFixed(2)}/slip pauses ${r.pauses}`,
    `per slip: SQS ${q.sqs.toFixed(1)} (CMV ${q.changeVisibility.toFixed(2)}), DDB reads ${q.dynamodbReads.toFixed(2)}, writes ${q.dynamodbWrites.toFixed(2)} (limits table ${q.limitsTableWrites.toFixed(2)}, of which refused ${q.limitsTableRefused.toFixed(2)})`,
  ].join(' | ');
}

/** One task that did not succeed, as its record tells it: attempts, crash counters, each attempt's outcome and error code, the last error. */
function storyOf(item: Record<string, unknown>): string {
  const history = (item.history ?? []) as { outcome?: string; error?: { code?: string } }[];
  const error = item.error as { code?: string; message?: string } | undefined;
  return (
    `${String(item.task_id)} ${String(item.type)} ${String(item.status)} attempts ${String(item.attempts)}/${String(item.max_attempts)} ` +
    `crashes ${String(item.crashes ?? 0)} shared ${String(item.unattributed_crashes ?? 0)} ` +
    `history [${history.map((h) => `${h.outcome}${h.error?.code === undefined ? '' : `:${h.error.code}`}`).join(' ')}]` +
    (error === undefined ? '' : ` error ${error.code ?? ''} ${error.message ?? ''}`)
  );
}

async function main(): Promise<void> {
  const o = args();
  if (!Number.isInteger(o.timeScale) || o.timeScale < 1 || 40 % o.timeScale !== 0) {
    throw new Error('--time-scale must be a whole divisor of 40 (1, 2, 4, 5, 8, 10, 20, 40)');
  }
  RATE_PER_SECOND = 40 / o.timeScale;
  EMAIL_MS = 1200 * o.timeScale;
  RENDER_MS = 800 * o.timeScale;
  // Workers (and their restarts in a kill run) start from one esbuild bundle, as a Lambda
  // function's code is bundled: a restart costs ≈ 0.4 s of CPU instead of tsx's 1.2 s, which the
  // surviving worker would otherwise lose on a 2-core machine; and the run keeps the code it
  // started with.
  const bundle = await buildWorkerBundle([PAYROLL_REGISTRY_MODULE]);
  process.env[WORKER_BUNDLE_ENV] = bundle.dir;
  try {
    await runAll(o);
  } finally {
    await bundle.remove();
  }
}

async function runAll(o: ReturnType<typeof args>): Promise<void> {
  const results: RunResult[] = [];
  process.stdout.write(
    `payroll: ${o.slips} slips (render ${RENDER_MS} ms on the cpu lane, email ${EMAIL_MS} ms, provider ${RATE_PER_SECOND}/s; time scale ${o.timeScale}), ${WORKERS} worker processes, lease ${o.lease} s, ${o.runs} run(s) per configuration\n`,
  );
  for (const config of o.configs) {
    for (let i = 0; i < o.runs; i += 1) {
      results.push(await runOnce(config, o, 0, `run ${i + 1}`));
    }
  }
  if (o.kills > 0) {
    results.push(await runOnce('kaj', o, o.kills, 'kill run'));
  }
  if (o.runs > 0) process.stdout.write('\nmedians (no kills):\n');
  for (const config of o.configs) {
    const rs = results.filter((r) => r.config === config && r.kills === 0);
    if (rs.length === 0) continue;
    const m = (f: (r: RunResult) => number) => median(rs.map(f));
    process.stdout.write(
      `  ${config.padEnd(4)} makespan ${m((r) => r.makespanS).toFixed(1)} s, floor ${rs[0]?.floorS.toFixed(1)} s, ratio ${m((r) => r.ratio).toFixed(3)}, steady ${m((r) => r.provider.steadyPerSecond).toFixed(2)}/s, 429s ${m((r) => r.provider.tooManyRequests)}, arrivals over the limit ${m((r) => r.provider.arrivalsOverLimit)}, peak/1s ${m((r) => r.provider.peakPerSecond)}, peak in flight ${m((r) => r.provider.peakInFlight)}, dup ${m((r) => r.provider.duplicates)}, failed ${m((r) => r.failed)}, deferrals/slip ${m((r) => r.deferrals / o.slips).toFixed(2)}, SQS/slip ${m((r) => perSlip(r, o.slips).sqs).toFixed(1)}, DDB writes/slip ${m((r) => perSlip(r, o.slips).dynamodbWrites).toFixed(2)}\n`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
