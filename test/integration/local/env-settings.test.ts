/**
 * The settings docs/deploy.md ("Settings of the functions and `npm start`") lists as environment
 * variables (KAJ_LEASE_SECONDS, KAJ_RETENTION_DAYS) work for `npm start` as they do for the
 * Lambda functions: parsed the same way, bad values stop it with exit 2 naming the variable.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../shared/config/errors.js';
import { ENV, PRIORITIES } from '../../../shared/config/resources.js';
import { loadFunctionConfig, settingsFromEnvironment } from '../../../shared/config/settings.js';
import type { TaskRecord } from '../../../shared/task/model.js';
import { localState, type SandboxRun, sandboxPerTest, until } from './sandbox.js';

const run = sandboxPerTest();

/** local/main.ts itself (what the start script runs), in a sandbox. */
function startMain(env: Record<string, string>): SandboxRun {
  return run(process.execPath, ['--import', 'tsx', 'local/main.ts', '--port', '0', '--in-memory'], env);
}

describe('settingsFromEnvironment parses as loadFunctionConfig does', () => {
  const resources: Record<string, string> = { [ENV.tableName]: 't' };
  for (const p of PRIORITIES) {
    resources[ENV.queueUrl(p)] = `http://q/${p}`;
    resources[ENV.dlqUrl(p)] = `http://q/${p}-dlq`;
  }
  it.each([
    [{}],
    [{ [ENV.leaseSeconds]: '' }],
    [{ [ENV.leaseSeconds]: '9' }],
    [{ [ENV.leaseSeconds]: ' 12 ' }],
    [{ [ENV.leaseSeconds]: '4.5', [ENV.retentionDays]: '30' }],
    [{ [ENV.leaseSeconds]: 'abc' }],
    [{ [ENV.leaseSeconds]: 'Infinity' }],
    [{ [ENV.leaseSeconds]: '1' }],
    [{ [ENV.leaseSeconds]: '901' }],
    [{ [ENV.retentionDays]: '0' }],
    [{ [ENV.retentionDays]: '1.5' }],
    [{ [ENV.retentionDays]: 'x' }],
  ])('%j', (vars: Record<string, string>) => {
    let lambda: { leaseSeconds: number; retentionDays: number } | 'rejected';
    try {
      const s = loadFunctionConfig({ ...resources, ...vars }).settings;
      lambda = { leaseSeconds: s.leaseSeconds, retentionDays: s.retentionDays };
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      lambda = 'rejected';
    }
    if (lambda === 'rejected') {
      let thrown: unknown;
      try {
        settingsFromEnvironment(vars);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      // Named by the variable, whichever check failed.
      const name = Object.keys(vars).find((k) => (thrown as Error).message.includes(k));
      expect(name, (thrown as Error).message).toBeDefined();
      expect((thrown as ConfigError).setting).toBe(name);
    } else {
      const local = settingsFromEnvironment(vars);
      expect({ leaseSeconds: local.leaseSeconds ?? 60, retentionDays: local.retentionDays ?? 7 }).toEqual(lambda);
    }
  });
});

describe('npm start reads the documented environment variables', () => {
  it.each([
    [ENV.leaseSeconds, 'abc', /KAJ_LEASE_SECONDS must be a number, got "abc"/],
    [ENV.leaseSeconds, '1', /KAJ_LEASE_SECONDS=1: leaseSeconds must be in \[3, 900\]/],
    [ENV.retentionDays, '1.5', /KAJ_RETENTION_DAYS=1\.5: retentionDays must be an integer/],
  ])('%s=%s: exit 2, the variable named', async (name, value, message) => {
    const p = startMain({ [name]: value });
    // Bounded either way: it exits, or it starts (the banner), which is the failure.
    const first = await Promise.race([
      p.exited,
      p.waitFor(/Ctrl-C drains/).then(
        () => 'started' as const,
        () => 'exited' as const,
      ),
    ]);
    expect(first, p.output()).not.toBe('started');
    const exit = await p.exited;
    expect(exit.code, p.output()).toBe(2);
    expect(p.output()).toMatch(message);
    expect(p.output()).not.toMatch(/Kaj is running locally/);
  });

  it('KAJ_LEASE_SECONDS sets the lease of a running task; KAJ_RETENTION_DAYS the expiry of a finished one', async () => {
    const p = startMain({ [ENV.leaseSeconds]: '9', [ENV.retentionDays]: '2' });
    await p.waitFor(/Ctrl-C drains/);
    const state = localState(p.dir);
    const res = await fetch(`${state.apiUrl}/api/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        type: 'send_email',
        // Longer than the first heartbeat (lease/3 = 3 s), which writes the (lazy) claim.
        payload: { to: 'ada@example.com', subject: 'lease', simulate: { latency_ms: 4500 } },
      }),
    });
    const { task_id: taskId } = (await res.json()) as { task_id: string };
    const dynamodb = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: state.endpoints.dynamodb,
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
    });
    const doc = DynamoDBDocumentClient.from(dynamodb);
    const get = async () =>
      (await doc.send(new GetCommand({ TableName: state.resources.tableName, Key: { task_id: taskId } })))
        .Item as TaskRecord;
    try {
      const running = await until('the task to be running', async () => {
        const r = await get();
        return r.status === 'running' ? r : undefined;
      });
      // The claim, written at the first heartbeat, sets lease_until = its own time (updated_at) +
      // lease, from one clock reading: exactly the 9 s lease however late the heartbeat fired. (The
      // next heartbeat, lease/3 later, comes after the 4.5 s handler has ended.)
      const leased = (running.lease_until ?? 0) - Date.parse(running.updated_at);
      expect(leased).toBe(9_000);
      const done = await until('the task to succeed', async () => {
        const r = await get();
        return r.status === 'succeeded' ? r : undefined;
      });
      expect((done.expires_at ?? 0) - Math.floor(Date.parse(done.finished_at ?? '') / 1000)).toBe(2 * 86_400);
    } finally {
      dynamodb.destroy();
    }
    // And the banner says which settings are in force.
    expect(p.output()).toMatch(/Settings +lease 9 s \(KAJ_LEASE_SECONDS\), retention 2 days \(KAJ_RETENTION_DAYS\)/);
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });
});
