/**
 * Redrive throughput of `kaj dlq redrive` on the local stack (embedded emulators).
 *
 *   npx tsx bench/redrive.ts [--n 1000] [--runs 3]
 *
 * Each run fills the normal DLQ with N dead tasks exactly as the consumer leaves them (a failed
 * record in the table, a dead letter with kaj attributes in the DLQ), then times
 * `kaj dlq redrive --local --yes` (the real command, in-process) until the DLQ is empty, and
 * checks every task ended queued with one new message. Consumers are off, so the figure is the
 * redrive alone. The emulators run in a child process (as under `npm start`, where the CLI is
 * another process), so client and emulators do not share one CPU. Prints each run and the
 * median in tasks/s.
 */
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultContext } from '../cli/context.js';
import { runCli } from '../cli/program.js';
import { startLocalRuntime } from '../local/runtime.js';
import { LOCAL_STATE_FILE } from '../shared/config/local-state.js';
import { taskQueueUrls, type LocalState } from '../shared/aws/wiring.js';
import { SqsTaskQueue } from '../shared/aws/sqs-task-queue.js';
import { deadLetterOf } from '../shared/task/lifecycle.js';
import { capturedIo } from '../testing/captured-io.js';
import { deadTaskRecord } from '../testing/fixtures.js';
import { queueDepth } from '../testing/harness.js';
import { startEmulatorProcess } from './lib/emulator-process.js';
import { median, num } from './lib/report.js';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '3' },
  },
});
const n = num(values.n, 'n', true, 1);
const runs = num(values.runs, 'runs', true, 1);

const emulators = await startEmulatorProcess();
const runtime = await startLocalRuntime({
  prefix: `bench-redrive-${process.pid}`,
  port: 0,
  consumers: false,
  sweepIntervalMs: 3_600_000,
  endpoints: emulators.endpoints,
});
const dir = mkdtempSync(join(tmpdir(), 'kaj-bench-'));
// What `npm start` writes for `kaj --local`: the CLI under test finds this runtime through it.
const state: LocalState = { pid: process.pid, endpoints: runtime.endpoints, resources: runtime.resources };
mkdirSync(dirname(join(dir, LOCAL_STATE_FILE)), { recursive: true });
writeFileSync(join(dir, LOCAL_STATE_FILE), JSON.stringify(state));
const queue = new SqsTaskQueue(runtime.clients.sqs, taskQueueUrls(runtime.resources));

async function pool<T>(items: readonly T[], width: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

const dlqDepth = (): Promise<number> => queueDepth(runtime.clients.sqs, runtime.resources.deadLetterQueueUrls.normal);

async function fill(run: number): Promise<string[]> {
  const now = Date.now();
  const ids = Array.from({ length: n }, (_, i) => `t_bench_${run}_${i}`);
  await pool(ids, 32, async (id) => {
    const error = {
      name: 'PermanentError',
      message: 'provider rejected recipient',
      retryable: false,
      code: 'HTTP_400',
    };
    // A dead task as the DLQ tests build it, with a real-looking payload and one attempt.
    const record = deadTaskRecord(id, now, error, {
      payload: { to: 'ada@example.com', subject: 'hi' },
      attempts: 1,
      max_attempts: 6,
      history: [{ attempt: 1, outcome: 'failed', finished_at: new Date(now).toISOString(), error }],
      fingerprint: 'bench',
      lease_token: 1,
    });
    await runtime.kaj.store.create(record);
    await queue.sendDead(deadLetterOf(record, now));
  });
  return ids;
}

const rates: number[] = [];
try {
  for (let run = 1; run <= runs; run += 1) {
    const ids = await fill(run);
    // The depth attributes settle a moment after the last send / delete.
    for (let i = 0; (await dlqDepth()) !== n; i += 1) {
      if (i > 100) throw new Error(`DLQ holds ${await dlqDepth()} messages, expected ${n}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const captured = capturedIo();
    const started = performance.now();
    const code = await runCli(
      ['dlq', 'redrive', '--local', '--yes', '--json'],
      defaultContext({
        io: captured.io,
        cwd: dir,
        env: {},
        actor: 'bench',
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const report = JSON.parse(captured.out() || '{}') as { redriven?: number; failed?: number };
    if (code !== 0 || report.redriven !== n)
      throw new Error(`run ${run}: exit ${code}, ${captured.out().slice(0, 300)} ${captured.err()}`);
    let left = await dlqDepth();
    for (let i = 0; left !== 0 && i < 100; i += 1) {
      await new Promise((r) => setTimeout(r, 50));
      left = await dlqDepth();
    }
    const sample = await runtime.kaj.store.get(ids[Math.floor(n / 2)] as string);
    if (left !== 0 || sample?.status !== 'queued' || sample.redrive_count !== 1)
      throw new Error(`run ${run}: DLQ left ${left}, sample ${sample?.status}`);
    rates.push(n / seconds);
    process.stdout.write(
      `run ${run}: ${n} tasks redriven in ${seconds.toFixed(2)} s = ${(n / seconds).toFixed(0)} tasks/s\n`,
    );
  }
  process.stdout.write(
    `redrive rate (median of ${runs}, N=${n}, embedded emulators, node ${process.version}): ${median(rates).toFixed(0)} tasks/s\n`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
  await runtime.stop(1_000);
  await emulators.stop();
}
process.exit(0);
