import * as z from 'zod';
import { defineTask, PermanentError, RetryableError, TaskRegistry } from '../../shared/task/define.js';

/** What the test task types saw: start times per task id, in start order. */
export class TaskProbe {
  readonly starts = new Map<string, number[]>();
  record(taskId: string): void {
    const list = this.starts.get(taskId) ?? [];
    list.push(Date.now());
    this.starts.set(taskId, list);
  }
  runs(taskId: string): number {
    return this.starts.get(taskId)?.length ?? 0;
  }
}

const fastBackoff = { baseSeconds: 0.05, capSeconds: 0.2 };

/** Task types with scripted behaviour for integration tests. */
export function testRegistry(probe: TaskProbe): TaskRegistry {
  return new TaskRegistry([
    defineTask({
      type: 'echo',
      schema: z.object({ value: z.unknown() }),
      handler: async (p, ctx) => {
        probe.record(ctx.taskId);
        return { echoed: p.value, attempt: ctx.attempt };
      },
    }),
    defineTask({
      type: 'flaky',
      schema: z.object({ fail_times: z.number().int().min(0) }),
      backoff: fastBackoff,
      handler: async (p, ctx) => {
        probe.record(ctx.taskId);
        if (ctx.attempt <= p.fail_times) throw new RetryableError(`transient failure ${ctx.attempt}`);
        return { ok: true, attempt: ctx.attempt };
      },
    }),
    defineTask({
      type: 'always_fails',
      schema: z.object({}),
      maxAttempts: 3,
      backoff: fastBackoff,
      handler: async (_p, ctx) => {
        probe.record(ctx.taskId);
        throw new RetryableError('downstream is down');
      },
    }),
    defineTask({
      type: 'permanent',
      schema: z.object({}),
      handler: async (_p, ctx) => {
        probe.record(ctx.taskId);
        throw new PermanentError('recipient does not exist', { code: 'HTTP_404' });
      },
    }),
    defineTask({
      type: 'sleepy',
      schema: z.object({ ms: z.number().int().min(0).max(60_000), label: z.string().optional() }),
      handler: async (p, ctx) => {
        probe.record(ctx.taskId);
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, p.ms);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(ctx.signal.reason);
          });
        });
        return { slept: p.ms };
      },
    }),
  ]);
}
