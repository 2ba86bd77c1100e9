/**
 * Soak: many tasks across the three priorities — 30 % failing transiently (1-2 retries), 2 %
 * poison (a permanent error) — while the worker processes (`local/worker.ts`) are SIGKILLed
 * every few seconds and restarted. At the end:
 *
 * - succeeded + failed = submitted, nothing left queued/running/retrying;
 * - every failure is a poison task or a crash loop (a task caught in `crashLoopReceives` kills);
 * - duplicate executions (handler runs whose outcome was never recorded — cut short by a kill —
 *   and so were redone, counted from an execution log the workers append to, against the
 *   outcomes in each task's history) are bounded by the kills.
 *
 * Run by the reliability suite at CI size (test/integration/reliability/soak.test.ts) and at any
 * size by `npm run soak` (bench/soak.ts), on the embedded emulators (this process) or on moto.
 *
 * @module
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { paginateScan } from '@aws-sdk/lib-dynamodb';
import { PRIORITIES, type Priority } from '../shared/config/resources.js';
import type { TaskRecord, TaskStatus } from '../shared/task/model.js';
import { EMBEDDED_TARGET, type EmulatorTarget } from '../local/emulators.js';
import { seededRandom } from './determinism.js';
import { Bench, FINISHED, type StartedWorker } from './harness.js';

export const SOAK_DEFAULTS = {
  tasks: 2_000,
  /** Worker processes running at once. */
  workers: 2,
  /** SIGKILL one worker (round robin) this often, and restart it, until `maxKills`. 0: never. */
  killEveryMs: 4_000,
  maxKills: Number.POSITIVE_INFINITY,
  leaseSeconds: 5,
  transientRate: 0.3,
  poisonRate: 0.02,
  /** Consumer invocations per priority queue in each worker. */
  concurrency: 4,
  batchSize: 10,
  /** Submits in flight at once. */
  submitConcurrency: 16,
  /** Most unfinished tasks at once: submission waits above it (keeps the backlog under the watchdog). */
  maxOutstanding: 2_000,
  /** Longest handler run, ms (each task sleeps a random share of it). */
  workMs: 20,
  watchdogSeconds: 30,
  outboxGraceSeconds: 2,
  /** Give up (and report failure) after this long, or when no task has finished for `stallMs`. */
  timeoutMs: 60 * 60_000,
  stallMs: 5 * 60_000,
  seed: 42,
};

export type SoakOptions = typeof SOAK_DEFAULTS & {
  readonly target: EmulatorTarget;
  /** Progress lines. */
  readonly log: (line: string) => void;
};

/**
 * What a soak found: `extraRuns`, handler runs whose outcome was never recorded (cut short by a
 * kill, so redone), bounded by `extraRunsBound` (kills × the messages one worker holds: 3 queues ×
 * concurrency × batch); `duplicateCompletions`, successful runs repeated for one task;
 * `leftoverMessages`, visible or delayed messages after the drain (in-flight ones apart).
 */
export type SoakReport = Awaited<ReturnType<typeof runSoak>>;

interface Script {
  readonly priority: Priority;
  readonly fail_attempts: number;
  readonly poison: boolean;
  readonly ms: number;
}

function scripts(o: SoakOptions): Script[] {
  // Seeded, so that a soak's workload can be replayed.
  const rnd = seededRandom(o.seed).next;
  return Array.from({ length: o.tasks }, () => {
    const p = rnd();
    const priority: Priority = p < 0.2 ? 'high' : p < 0.7 ? 'normal' : 'low';
    const r = rnd();
    const poison = r < o.poisonRate;
    const fail_attempts = !poison && r < o.poisonRate + o.transientRate ? (rnd() < 2 / 3 ? 1 : 2) : 0;
    return { priority, poison, fail_attempts, ms: Math.floor(rnd() * o.workMs) };
  });
}

async function statusCounts(bench: Bench): Promise<Record<TaskStatus, number>> {
  const counts: Record<TaskStatus, number> = {
    queued: 0,
    running: 0,
    retrying: 0,
    waiting: 0,
    succeeded: 0,
    failed: 0,
    cancelled: 0,
  };
  const scan = paginateScan(
    { client: bench.doc },
    {
      TableName: bench.runtime.resources.tableName,
      ProjectionExpression: '#s',
      ExpressionAttributeNames: { '#s': 'status' },
    },
  );
  for await (const page of scan) for (const item of page.Items ?? []) counts[item.status as TaskStatus] += 1;
  return counts;
}

/** Runs one soak and reports. Never throws for a broken invariant: read `invariantHeld`. */
export async function runSoak(options: Partial<SoakOptions> & { log?: (line: string) => void } = {}) {
  const o: SoakOptions = { ...SOAK_DEFAULTS, target: EMBEDDED_TARGET, log: () => {}, ...options };
  const workload = scripts(o);
  const t0 = Date.now();
  const elapsed = () => ((Date.now() - t0) / 1000).toFixed(1);
  const bench = await Bench.start(o.target, {
    tag: 'soak',
    lease: o.leaseSeconds,
    sweepIntervalMs: 1_000,
    settings: { outboxGraceSeconds: o.outboxGraceSeconds, watchdogSeconds: o.watchdogSeconds },
  });
  let swept = 0;
  const problems: string[] = [];
  try {
    const workerArgs = [
      '--concurrency',
      String(o.concurrency),
      '--batch-size',
      String(o.batchSize),
      '--log-level',
      'error',
    ];
    const slots: (StartedWorker | undefined)[] = await Promise.all(
      Array.from({ length: o.workers }, (_, i) => bench.startWorker({ label: `w${i}`, args: workerArgs })),
    );
    o.log(`[${elapsed()}s] ${o.workers} worker(s) up on ${bench.target}; submitting ${o.tasks} tasks`);

    // --- kill loop: SIGKILL one worker (round robin) every killEveryMs and start a new one in its slot.
    let kills = 0;
    let killing = o.killEveryMs > 0;
    let next = 0;
    const restarts: Promise<unknown>[] = [];
    const killer = killing
      ? setInterval(() => {
          if (!killing || kills >= o.maxKills) return;
          const i = next % o.workers;
          next += 1;
          const w = slots[i];
          if (w === undefined || !w.alive()) return;
          w.kill('SIGKILL');
          kills += 1;
          slots[i] = undefined;
          restarts.push(
            w.exited
              .then(() => bench.startWorker({ label: `w${i}`, args: workerArgs, waitReady: false }))
              .then((fresh) => {
                slots[i] = fresh;
              }),
          );
        }, o.killEveryMs)
      : undefined;

    // --- submit, at most maxOutstanding unfinished at once.
    let finished = 0;
    const ids: string[] = new Array<string>(o.tasks);
    let cursor = 0;
    const submitOne = async (i: number) => {
      const s = workload[i] as Script;
      for (let tries = 0; ; tries += 1) {
        try {
          const { record } = await bench.runtime.kaj.submitter.submit(
            {
              type: 'soak',
              priority: s.priority,
              payload: { fail_attempts: s.fail_attempts, poison: s.poison, ms: s.ms },
            },
            { owner: 'local' },
          );
          ids[i] = record.task_id;
          return;
        } catch (err) {
          if (tries >= 5) throw err;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    };
    const submitter = async () => {
      for (;;) {
        while (!stalled && cursor < o.tasks && cursor - finished > o.maxOutstanding)
          await new Promise((r) => setTimeout(r, 200));
        if (stalled || cursor >= o.tasks) return;
        const i = cursor;
        cursor += 1;
        await submitOne(i);
      }
    };
    // A stall: no task finished for stallMs while some are unfinished. Checked on every count.
    let lastProgressAt = Date.now();
    let stalled = false;
    const noteFinished = (n: number) => {
      if (n > finished) lastProgressAt = Date.now();
      finished = n;
      if (finished < cursor && Date.now() - lastProgressAt > o.stallMs) stalled = true;
    };
    const progress = setInterval(() => {
      void statusCounts(bench)
        .then((c) => {
          noteFinished(FINISHED.reduce((n, s) => n + c[s], 0));
          o.log(
            `[${elapsed()}s] submitted ${cursor}/${o.tasks}  finished ${finished} (succeeded ${c.succeeded}, failed ${c.failed})  ` +
              `queued ${c.queued} running ${c.running} retrying ${c.retrying}  kills ${kills}`,
          );
        })
        .catch(() => undefined);
    }, 3_000);
    const submitStart = Date.now();
    await Promise.all(Array.from({ length: o.submitConcurrency }, submitter));
    const submitSeconds = (Date.now() - submitStart) / 1000;
    const submittedAt = Date.now();
    o.log(`[${elapsed()}s] all ${o.tasks} submitted in ${submitSeconds.toFixed(1)}s`);

    // --- drain.
    const deadline = t0 + o.timeoutMs;
    for (;;) {
      const c = await statusCounts(bench);
      noteFinished(FINISHED.reduce((n, s) => n + c[s], 0));
      if (finished >= o.tasks) break;
      if (stalled) {
        problems.push(
          `stalled: no task finished for ${Math.round((Date.now() - lastProgressAt) / 1000)} s with ${cursor - finished} unfinished`,
        );
        break;
      }
      if (Date.now() > deadline) {
        problems.push(`timed out with ${o.tasks - finished} task(s) unfinished`);
        break;
      }
      await new Promise((r) => setTimeout(r, 1_000));
    }
    const drainedAt = Date.now();
    killing = false;
    clearInterval(killer);
    clearInterval(progress);
    await Promise.allSettled(restarts);
    o.log(
      `[${elapsed()}s] drained ${((drainedAt - submittedAt) / 1000).toFixed(1)}s after the last submit; ${kills} kills`,
    );
    // Let duplicates still on the queue be consumed and dropped before looking at the queues.
    await new Promise((r) => setTimeout(r, o.leaseSeconds * 1000 + 2_000));
    await bench.killWorkers();

    // --- verify against the whole table and the execution log.
    const records = new Map<string, TaskRecord>((await bench.records()).map((r) => [r.task_id, r]));
    const executions = bench.executions();
    const starts = new Map<string, number>();
    const ends = new Map<string, number>();
    for (const e of executions) {
      const m = e.event === 'S' ? starts : ends;
      m.set(e.taskId, (m.get(e.taskId) ?? 0) + 1);
    }
    let succeeded = 0;
    let failed = 0;
    let cancelled = 0;
    let unfinished = 0;
    let failedPoison = 0;
    let failedCrashLoop = 0;
    let failedOther = 0;
    let wrongOutcome = 0;
    let tasksHitByKills = 0;
    let extraRuns = 0;
    let maxExtra = 0;
    let duplicateCompletions = 0;
    for (const [i, id] of ids.entries()) {
      const s = workload[i] as Script;
      const r = id === undefined ? undefined : records.get(id);
      if (r === undefined) {
        unfinished += 1;
        problems.push(`task #${i} (${id ?? 'never submitted'}) has no record`);
        continue;
      }
      if (r.history.some((h) => h.outcome === 'crashed')) tasksHitByKills += 1;
      const crashLooped = r.status === 'failed' && r.last_error?.code === 'CRASH';
      if (r.status === 'succeeded') {
        succeeded += 1;
        if (s.poison) wrongOutcome += 1;
      } else if (r.status === 'failed') {
        failed += 1;
        if (r.last_error?.code === 'POISON' && s.poison) failedPoison += 1;
        else if (crashLooped) failedCrashLoop += 1;
        else {
          failedOther += 1;
          if (failedOther <= 5) problems.push(`task ${id} failed unexpectedly: ${JSON.stringify(r.last_error)}`);
        }
      } else if (r.status === 'cancelled') cancelled += 1;
      else {
        unfinished += 1;
        if (unfinished <= 5) {
          const attempts = r.history.map((h) => `${h.attempt}:${h.outcome}`).join(' ');
          problems.push(
            `task ${id} is still ${r.status} (attempts ${r.attempts}, history [${attempts}], outbox ${r.outbox_pk ?? 'none'}, updated ${r.updated_at}, dispatch ${r.dispatch_id})`,
          );
        }
      }
      // Runs whose outcome the table recorded (retrying, succeeded, failed): every other run was
      // cut short by a kill (or its outcome write was lost) and its work was done again.
      const recorded = r.history.filter((h) => h.outcome !== 'crashed').length;
      const ran = starts.get(r.task_id) ?? 0;
      const extra = Math.max(0, ran - recorded);
      extraRuns += extra;
      maxExtra = Math.max(maxExtra, extra);
      duplicateCompletions += Math.max(0, (ends.get(r.task_id) ?? 0) - 1);
    }
    let leftoverMessages = 0;
    let inFlightMessages = 0;
    let deadLetters = 0;
    for (const p of PRIORITIES) {
      const a = await bench.runtime.clients.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: bench.runtime.resources.queueUrls[p],
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesDelayed',
            'ApproximateNumberOfMessagesNotVisible',
          ],
        }),
      );
      leftoverMessages +=
        Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(a.Attributes?.ApproximateNumberOfMessagesDelayed ?? 0);
      inFlightMessages += Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
      const d = await bench.runtime.clients.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: bench.runtime.resources.deadLetterQueueUrls[p],
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      deadLetters +=
        Number(d.Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(d.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
    }
    swept = bench.log.entries
      .filter((e) => e.message === 'outbox swept')
      .reduce((n, e) => n + Number((e.fields as { sent?: number } | undefined)?.sent ?? 0), 0);

    const extraRunsBound = kills * 3 * o.concurrency * o.batchSize;
    if (succeeded + failed + cancelled !== o.tasks)
      problems.push(`succeeded + failed + cancelled = ${succeeded + failed + cancelled} ≠ ${o.tasks}`);
    if (unfinished > 0) problems.push(`${unfinished} task(s) not finished`);
    if (failedOther > 0) problems.push(`${failedOther} unexpected failure(s)`);
    if (wrongOutcome > 0) problems.push(`${wrongOutcome} poison task(s) succeeded`);
    if (extraRuns > extraRunsBound) problems.push(`${extraRuns} extra runs exceed the bound ${extraRunsBound}`);
    if (duplicateCompletions > extraRunsBound)
      problems.push(`${duplicateCompletions} duplicate completions exceed the bound ${extraRunsBound}`);
    const totalSeconds = (drainedAt - t0) / 1000;
    return {
      target: bench.target,
      submitted: ids.filter((x) => x !== undefined).length,
      succeeded,
      failed,
      cancelled,
      unfinished,
      failedPoison,
      failedCrashLoop,
      failedOther,
      wrongOutcome,
      kills,
      tasksHitByKills,
      executions: [...starts.values()].reduce((a, b) => a + b, 0),
      extraRuns,
      maxExtraRunsPerTask: maxExtra,
      duplicateCompletions,
      extraRunsBound,
      sweptMessages: swept,
      leftoverMessages,
      inFlightMessages,
      deadLetters,
      submitSeconds,
      drainSeconds: (drainedAt - submittedAt) / 1000,
      totalSeconds,
      tasksPerSecond: o.tasks / ((drainedAt - submitStart) / 1000),
      invariantHeld: problems.length === 0,
      problems,
    };
  } finally {
    await bench.stop();
  }
}

export function formatReport(r: SoakReport): string {
  const pct = (n: number) => `${((100 * n) / Math.max(1, r.submitted)).toFixed(1)} %`;
  return [
    `soak on ${r.target}: ${r.invariantHeld ? 'INVARIANT HELD' : 'INVARIANT BROKEN'}`,
    `  tasks        submitted ${r.submitted}  succeeded ${r.succeeded}  failed ${r.failed} (poison ${r.failedPoison}, crash loop ${r.failedCrashLoop}, other ${r.failedOther})  cancelled ${r.cancelled}  unfinished ${r.unfinished}`,
    `  kills        ${r.kills} SIGKILLs; ${r.tasksHitByKills} task(s) had an attempt cut short (${pct(r.tasksHitByKills)})`,
    `  executions   ${r.executions} handler runs; ${r.extraRuns} cut short and redone (max ${r.maxExtraRunsPerTask} per task; ${(r.extraRuns / Math.max(1, r.kills)).toFixed(2)} per kill; bound ${r.extraRunsBound})`,
    `  duplicates   ${r.duplicateCompletions} successful run(s) repeated for an already-completed handler`,
    `  sweeper      ${r.sweptMessages} message(s) sent by the sweeper; ${r.leftoverMessages} visible/delayed message(s) left after the drain, ${r.inFlightMessages} in flight, ${r.deadLetters} dead letter(s)`,
    `  time         submit ${r.submitSeconds.toFixed(1)} s, drain ${r.drainSeconds.toFixed(1)} s after the last submit, total ${r.totalSeconds.toFixed(1)} s; ${r.tasksPerSecond.toFixed(1)} tasks/s end to end`,
    ...r.problems.map((p) => `  PROBLEM      ${p}`),
  ].join('\n');
}
