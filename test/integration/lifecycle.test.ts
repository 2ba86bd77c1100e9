import { ReceiveMessageCommand, ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import type { LocalRuntime } from '../../local/runtime.js';
import type { TaskView } from '../../shared/task/model.js';
import { runtimeForSuite } from '../support/suite-runtime.js';
import { targets } from '../support/targets.js';
import { TaskProbe, testRegistry } from '../support/test-tasks.js';
import { waitFor } from '../../testing/wait.js';

describe.each(targets())('task lifecycle end to end on $name', (target) => {
  let runtime: LocalRuntime;
  const probe = new TaskProbe();

  runtimeForSuite(
    target,
    'life',
    {
      registry: testRegistry(probe),
      sweepIntervalMs: 500,
      waitTimeSeconds: 2,
    },
    (r) => (runtime = r),
  );

  async function post(
    body: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; json: any; headers: Headers }> {
    const res = await fetch(`${runtime.url}/api/v1/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json(), headers: res.headers };
  }

  async function get(id: string): Promise<{ status: number; json: any }> {
    const res = await fetch(`${runtime.url}/api/v1/tasks/${id}`);
    return { status: res.status, json: await res.json() };
  }

  async function until(id: string, statuses: string[], timeoutMs = 20_000): Promise<TaskView> {
    return waitFor(
      `task ${id} to reach ${statuses.join('/')}`,
      async () => {
        const { json } = await get(id);
        return statuses.includes(json.status) ? (json as TaskView) : undefined;
      },
      { timeoutMs },
    );
  }

  it('runs a submitted task to succeeded with its result', async () => {
    const res = await post({ type: 'echo', payload: { value: { n: 42 } }, priority: 'high' });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ status: 'queued', priority: 'high' });
    expect(res.headers.get('location')).toBe(`/api/v1/tasks/${res.json.task_id}`);
    const done = await until(res.json.task_id, ['succeeded']);
    expect(done.result).toEqual({ echoed: { n: 42 }, attempt: 1 });
    expect(done.attempts).toBe(1);
    expect(done.history).toEqual([expect.objectContaining({ attempt: 1, outcome: 'succeeded' })]);
    expect(done.finished_at).toBeDefined();
  });

  it('retries a task that fails twice, then records success with attempts 3 and the history', async () => {
    const res = await post({ type: 'flaky', payload: { fail_times: 2 } });
    const done = await until(res.json.task_id, ['succeeded']);
    expect(done.attempts).toBe(3);
    expect(done.history.map((h) => h.outcome)).toEqual(['retrying', 'retrying', 'succeeded']);
    expect(done.history[0]?.error?.message).toBe('transient failure 1');
    expect(done.last_error?.message).toBe('transient failure 2');
    expect(probe.runs(res.json.task_id)).toBe(3);
  });

  it('dead-letters a task that always fails, with the error on the DLQ message', async () => {
    const res = await post({ type: 'always_fails', payload: {}, priority: 'low' });
    const id = res.json.task_id as string;
    const done = await until(id, ['failed']);
    expect(done.attempts).toBe(3);
    expect(done.last_error).toMatchObject({ message: 'downstream is down', retryable: true });
    const letter = await waitFor('dead letter', async () => {
      const out = await runtime.clients.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: runtime.resources.deadLetterQueueUrls.low,
          MaxNumberOfMessages: 10,
          MessageAttributeNames: ['All'],
          VisibilityTimeout: 1,
        }),
      );
      const m = (out.Messages ?? []).find((x) => x.MessageAttributes?.['kaj-task-id']?.StringValue === id);
      for (const other of out.Messages ?? []) {
        if (other !== m) {
          await runtime.clients.sqs.send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: runtime.resources.deadLetterQueueUrls.low,
              ReceiptHandle: other.ReceiptHandle,
              VisibilityTimeout: 0,
            }),
          );
        }
      }
      return m;
    });
    expect(letter.MessageAttributes?.['kaj-type']?.StringValue).toBe('always_fails');
    expect(letter.MessageAttributes?.['kaj-priority']?.StringValue).toBe('low');
    expect(letter.MessageAttributes?.['kaj-attempts']?.StringValue).toBe('3');
    expect(letter.MessageAttributes?.['kaj-error']?.StringValue).toBe('downstream is down');
    expect(JSON.parse(letter.Body ?? '{}')).toMatchObject({ task_id: id, type: 'always_fails', attempts: 3 });
  });

  it('fails a task with a permanent error after one attempt', async () => {
    const res = await post({ type: 'permanent', payload: {} });
    const done = await until(res.json.task_id, ['failed']);
    expect(done.attempts).toBe(1);
    expect(done.last_error).toMatchObject({ name: 'PermanentError', retryable: false, code: 'HTTP_404' });
    expect(probe.runs(res.json.task_id)).toBe(1);
  });

  it('replays an idempotent submit and refuses a conflicting one', async () => {
    const key = `order-${Math.random()}`;
    const first = await post({ type: 'echo', payload: { value: 1 }, idempotency_key: key });
    const again = await post({ type: 'echo', payload: { value: 1 }, idempotency_key: key });
    expect(first.status).toBe(202);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.json.task_id).toBe(first.json.task_id);
    const conflict = await post({ type: 'echo', payload: { value: 2 }, idempotency_key: key });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error).toMatchObject({ code: 'idempotency_conflict', field: 'idempotency_key' });
    // Keys are scoped per type: the same key on another type is another task.
    const otherType = await post({ type: 'flaky', payload: { fail_times: 0 }, idempotency_key: key });
    expect(otherType.status).toBe(202);
    expect(otherType.json.task_id).not.toBe(first.json.task_id);
    await until(first.json.task_id, ['succeeded']);
    expect(probe.runs(first.json.task_id)).toBe(1);
  });

  it('cancels a task before it starts, and its handler never runs', async () => {
    const res = await post({ type: 'echo', payload: { value: 'x' }, delay_seconds: 2 });
    const id = res.json.task_id as string;
    const del = await fetch(`${runtime.url}/api/v1/tasks/${id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ task_id: id, status: 'cancelled' });
    // Wait until the delayed message has been delivered and dropped, then check.
    await waitFor(
      'the delayed message to be consumed',
      async () => {
        const { GetQueueAttributesCommand } = await import('@aws-sdk/client-sqs');
        const a = await runtime.clients.sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: runtime.resources.queueUrls.normal,
            AttributeNames: [
              'ApproximateNumberOfMessages',
              'ApproximateNumberOfMessagesDelayed',
              'ApproximateNumberOfMessagesNotVisible',
            ],
          }),
        );
        const total = Object.values(a.Attributes ?? {}).reduce((s, v) => s + Number(v), 0);
        return total === 0 ? true : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 200 },
    );
    expect(probe.runs(id)).toBe(0);
    expect((await get(id)).json.status).toBe('cancelled');
    const again = await fetch(`${runtime.url}/api/v1/tasks/${id}`, { method: 'DELETE' });
    expect(again.status).toBe(200);
  });

  it('refuses to cancel a finished task', async () => {
    const res = await post({ type: 'echo', payload: { value: 1 } });
    await until(res.json.task_id, ['succeeded']);
    const del = await fetch(`${runtime.url}/api/v1/tasks/${res.json.task_id}`, { method: 'DELETE' });
    expect(del.status).toBe(409);
    expect(((await del.json()) as { error: { code: string } }).error.code).toBe('not_cancellable');
  });

  it('does not run a delayed task before its run_at', async () => {
    const res = await post({ type: 'echo', payload: { value: 'later' }, delay_seconds: 2 });
    const id = res.json.task_id as string;
    const runAt = Date.parse(res.json.run_at);
    expect(runAt - Date.parse(res.json.created_at)).toBe(2000);
    const done = await until(id, ['succeeded']);
    const started = probe.starts.get(id)?.[0] ?? 0;
    // SQS DelaySeconds has 1 s granularity; allow the clock skew of one tick.
    expect(started).toBeGreaterThanOrEqual(runAt - 50);
    expect(Date.parse(done.started_at ?? '')).toBeGreaterThanOrEqual(runAt - 50);
  });

  it('a batch of 25 across three priorities, with a bad item, a replay and a delayed item: per-item answers in order, every accepted task runs once', async () => {
    const key = `batch-${Math.random()}`;
    const earlier = await post({ type: 'echo', payload: { value: 'k' }, idempotency_key: key });
    const tasks = [
      ...Array.from({ length: 21 }, (_, i) => ({
        type: 'echo',
        payload: { value: i },
        priority: (['high', 'normal', 'low'] as const)[i % 3],
      })),
      { type: 'flaky', payload: { fail_times: 'two' } },
      { type: 'echo', payload: { value: 'k' }, idempotency_key: key },
      { type: 'echo', payload: { value: 'later' }, delay_seconds: 2 },
      { type: 'nope' },
    ];
    const res = await fetch(`${runtime.url}/api/v1/tasks/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tasks }),
    });
    expect(res.status).toBe(207);
    const b = (await res.json()) as { accepted: number; replayed: number; rejected: number; results: any[] };
    expect(b.results.map((r) => r.index)).toEqual(tasks.map((_, i) => i));
    expect(b.results.map((r) => r.http_status)).toEqual([...Array(21).fill(202), 422, 200, 202, 422]);
    expect([b.accepted, b.replayed, b.rejected]).toEqual([22, 1, 2]);
    expect(b.results[21].error).toMatchObject({ code: 'validation_error', field: 'payload.fail_times' });
    expect(b.results[22].task_id).toBe(earlier.json.task_id);
    const ids: string[] = b.results.filter((r) => r.http_status === 202).map((r) => r.task_id);
    for (const id of ids) await until(id, ['succeeded']);
    for (const id of ids) expect(probe.runs(id)).toBe(1);
    const delayed = b.results[23];
    expect((probe.starts.get(delayed.task_id)?.[0] ?? 0) >= Date.parse(delayed.run_at) - 50).toBe(true);
    expect((await get(ids[0] as string)).json).toMatchObject({ priority: 'high', result: { echoed: 0, attempt: 1 } });
  });

  it('rejects an unknown type and a bad payload, naming the field', async () => {
    const unknown = await post({ type: 'nope', payload: {} });
    expect(unknown.status).toBe(422);
    expect(unknown.json.error).toMatchObject({ code: 'unknown_type', field: 'type' });
    const bad = await post({ type: 'flaky', payload: { fail_times: 'two' } });
    expect(bad.status).toBe(422);
    expect(bad.json.error).toMatchObject({ code: 'validation_error', field: 'payload.fail_times' });
    const badPriority = await post({ type: 'echo', payload: {}, priority: 'urgent' });
    expect(badPriority.json.error.field).toBe('priority');
    const badJson = await post('{"type": ');
    expect(badJson.status).toBe(400);
    const wrongType = await post({ type: 'echo' }, { 'content-type': 'text/plain' });
    expect(wrongType.status).toBe(415);
    const tooBig = await post({ type: 'echo', payload: { value: 'x'.repeat(70_000) } });
    expect(tooBig.status).toBe(413);
    expect((await get('t_0123456789abcdef0123456789abcdef')).status).toBe(404);
  });
});

describe.each(targets())('priorities under saturation on $name', (target) => {
  let runtime: LocalRuntime;
  const probe = new TaskProbe();

  runtimeForSuite(
    target,
    'prio',
    {
      registry: testRegistry(probe),
      batchSize: 1,
      concurrency: { high: 4, normal: 2, low: 1 },
      waitTimeSeconds: 1,
    },
    (r) => (runtime = r),
  );

  it('starts high-priority tasks sooner than low-priority ones submitted before them', async () => {
    // Twelve of each in one request per priority: the lows are out first, the highs one request
    // later (24 submits one by one would give the low consumer as many round trips of a loaded
    // machine to get ahead in, and measure the submits rather than the priorities).
    const submit = async (priority: string) => {
      const res = await fetch(`${runtime.url}/api/v1/tasks/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          tasks: Array.from({ length: 12 }, () => ({ type: 'sleepy', payload: { ms: 150 }, priority })),
        }),
      });
      const b = (await res.json()) as { accepted: number; results: { task_id: string }[] };
      expect(b.accepted).toBe(12);
      return b.results.map((r) => r.task_id);
    };
    const t0 = Date.now();
    const low = await submit('low');
    const high = await submit('high');
    await waitFor(
      'all tasks to start',
      () => ([...low, ...high].every((id) => probe.runs(id) > 0) ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    const median = (ids: string[]) => {
      const s = ids.map((id) => (probe.starts.get(id)?.[0] ?? 0) - t0).sort((a, b) => a - b);
      return s[Math.floor(s.length / 2)] ?? 0;
    };
    expect(median(high)).toBeLessThan(median(low));
  });
});
