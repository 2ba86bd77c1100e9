/**
 * The `TaskQueue` contract: one suite, run against the in-memory fake (`memory-task-queue.test.ts`)
 * and against `SqsTaskQueue` on every SQS emulator target (`sqs-task-queue.test.ts`). It checks
 * what the port promises and the domain relies on: where a message lands, when it becomes
 * visible, the attributes the admin CLI reads, and the errors.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { partTest } from './parts.js';
import type { Priority } from '../../shared/config/resources.js';
import { MessageGoneError, QueueError, QueueUnavailableError } from '../../shared/task/queue-errors.js';
import {
  MAX_ERROR_ATTRIBUTE_CHARS,
  MESSAGE_ATTRIBUTES as A,
  type DeadLetter,
  type TaskMessage,
} from '../../shared/task/message.js';
import type { OutgoingMessage, TaskQueue } from '../../shared/task/task-queue.js';
import type { ReceivedTaskMessage } from '../../testing/memory-task-queue.js';

export interface TaskQueueUnderTest {
  readonly queue: TaskQueue;
  /**
   * Receives the messages visible now on the priority's queue (or, with `dead`, its DLQ), hiding
   * them for `visibilitySeconds` (default 30), with their message attributes and receive count.
   */
  receive(priority: Priority, options?: { dead?: boolean; visibilitySeconds?: number }): Promise<ReceivedTaskMessage[]>;
  /** Deletes a received message from the priority's queue. */
  delete(priority: Priority, receiptHandle: string): Promise<void>;
  /** Lets `ms` pass: real time on SQS, the fake's clock on the fake. */
  elapse(ms: number): Promise<void>;
  /** A queue of the same kind that cannot reach its service (absent where `leftOut.unreachable` says why). */
  unreachable?(): TaskQueue;
  cleanup(): Promise<void>;
}

export type TaskQueueFactory = () => Promise<TaskQueueUnderTest>;

/**
 * Parts of the contract a bench model may leave out on purpose. Each test of a part left out is
 * skipped, visibly: its title carries the reason the queue's test file gives. SQS and the fake run
 * every part.
 */
export const QUEUE_PARTS = {
  unreachable: 'the errors of a queue that cannot reach SQS',
} as const;
export type QueuePart = keyof typeof QUEUE_PARTS;

export interface TaskQueueContractOptions {
  /** Parts of the contract this queue leaves out on purpose, each with the reason ({@link QUEUE_PARTS}). */
  readonly leftOut?: Partial<Record<QueuePart, string>>;
}

const PRIORITIES: readonly Priority[] = ['high', 'normal', 'low'];

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => expect.fail(`expected a rejection, got ${JSON.stringify(v)}`),
    (err: unknown) => err,
  );
}

export function describeTaskQueueContract(
  name: string,
  factory: TaskQueueFactory,
  options: TaskQueueContractOptions = {},
): void {
  /** A test of a part of the contract the queue may leave out (then skipped, with the reason in its title). */
  const partCase = (part: QueuePart, title: string, fn: () => Promise<void>): void =>
    partTest(options.leftOut?.[part], title, fn);

  describe(`Class: TaskQueue contract on ${name}`, () => {
    let subject: TaskQueueUnderTest;
    let queue: TaskQueue;
    let taskId: string;

    beforeEach(async () => {
      subject = await factory();
      queue = subject.queue;
      taskId = `t_${randomUUID()}`;
    });
    afterEach(async () => {
      await subject.cleanup();
    });

    const message = (o: Partial<TaskMessage> = {}): TaskMessage => ({
      task_id: taskId,
      dispatch_id: `d_${randomUUID()}`,
      timeout_seconds: 60,
      ...o,
    });
    const letter = (o: Partial<DeadLetter> = {}): DeadLetter => ({
      task_id: taskId,
      dispatch_id: 'd_dead',
      type: 'send_email',
      priority: 'low',
      attempts: 3,
      reason: 'attempts exhausted',
      last_error: { name: 'HttpError', message: 'downstream is down', retryable: true, code: 'HTTP_503' },
      failed_at: '2030-01-01T00:00:10.000Z',
      ...o,
    });
    const string = (value: string) => ({ dataType: 'String', value });

    /** Every queue and DLQ other than `except` is empty. */
    async function othersEmpty(except: { priority: Priority; dead: boolean }): Promise<void> {
      for (const p of PRIORITIES) {
        for (const dead of [false, true]) {
          if (p === except.priority && dead === except.dead) continue;
          expect(await subject.receive(p, { dead }), `${p}${dead ? ' DLQ' : ''}`).toEqual([]);
        }
      }
    }

    describe('Method: send', () => {
      it.each(PRIORITIES)(
        'puts the message on the %s queue only, with its body and the task id, type and priority attributes',
        async (priority) => {
          const m = message();
          await queue.send(priority, m, { delaySeconds: 0, type: 'make_thumbnails' });
          const got = await subject.receive(priority);
          expect(got).toHaveLength(1);
          expect(JSON.parse(got[0]?.body ?? 'null')).toStrictEqual(m);
          expect(got[0]?.attributes).toStrictEqual({
            [A.taskId]: string(taskId),
            [A.type]: string('make_thumbnails'),
            [A.priority]: string(priority),
          });
          expect(got[0]?.receiveCount).toBe(1);
          await othersEmpty({ priority, dead: false });
        },
      );

      it('sends a message without timeout_seconds as it is', async () => {
        const m: TaskMessage = { task_id: taskId, dispatch_id: 'd_1' };
        await queue.send('normal', m, { delaySeconds: 0, type: 'job' });
        const [got] = await subject.receive('normal');
        expect(JSON.parse(got?.body ?? 'null')).toStrictEqual(m);
      });

      it('keeps a delayed message invisible for delaySeconds, then delivers it', async () => {
        const m = message();
        await queue.send('high', m, { delaySeconds: 2, type: 'job' });
        expect(await subject.receive('high')).toEqual([]);
        await subject.elapse(1000);
        expect(await subject.receive('high')).toEqual([]);
        await subject.elapse(1600);
        const got = await subject.receive('high');
        expect(got.map((g) => JSON.parse(g.body) as unknown)).toStrictEqual([m]);
      });

      it('delivers several messages, each once', async () => {
        const ms = [message(), message(), message()];
        for (const m of ms) await queue.send('low', m, { delaySeconds: 0, type: 'job' });
        const got = await subject.receive('low');
        expect(got.map((g) => (JSON.parse(g.body) as TaskMessage).dispatch_id).sort()).toEqual(
          ms.map((m) => m.dispatch_id).sort(),
        );
        expect(await subject.receive('low')).toEqual([]); // hidden while received
      });
    });

    describe('Method: sendMany', () => {
      const entry = (o: Partial<OutgoingMessage> = {}): OutgoingMessage => ({
        message: message(),
        delaySeconds: 0,
        type: 'job',
        ...o,
      });
      const dispatchIds = (got: ReceivedTaskMessage[]): string[] =>
        got.map((g) => (JSON.parse(g.body) as TaskMessage).dispatch_id).sort();

      /** Receives until `count` messages came (a receive hands out at most 10) or nothing more comes. */
      async function receiveAll(priority: Priority, count: number): Promise<ReceivedTaskMessage[]> {
        const got: ReceivedTaskMessage[] = [];
        for (let empty = 0; got.length < count && empty < 3; ) {
          const batch = await subject.receive(priority);
          got.push(...batch);
          empty = batch.length === 0 ? empty + 1 : 0;
        }
        return got;
      }

      it('puts every entry on the priority queue only, in batches of 10, with the attributes send gives; none failed', async () => {
        const entries = Array.from({ length: 23 }, () => entry({ type: 'make_thumbnails' }));
        expect(await queue.sendMany('high', entries)).toEqual([]);
        const got = await receiveAll('high', 23);
        expect(dispatchIds(got)).toEqual(entries.map((e) => e.message.dispatch_id).sort());
        for (const g of got) {
          expect(g.attributes).toStrictEqual({
            [A.taskId]: string(taskId),
            [A.type]: string('make_thumbnails'),
            [A.priority]: string('high'),
          });
          expect(JSON.parse(g.body)).toStrictEqual(
            entries.find((e) => g.body.includes(e.message.dispatch_id))?.message,
          );
        }
        await othersEmpty({ priority: 'high', dead: false });
      });

      it('keeps each entry invisible for its own delay', async () => {
        const now = entry();
        const later = entry({ delaySeconds: 2 });
        expect(await queue.sendMany('low', [later, now])).toEqual([]);
        expect(dispatchIds(await subject.receive('low'))).toEqual([now.message.dispatch_id]);
        await subject.elapse(2600);
        expect(dispatchIds(await subject.receive('low'))).toEqual([later.message.dispatch_id]);
      });

      it('sends nothing for no entries', async () => {
        expect(await queue.sendMany('normal', [])).toEqual([]);
        expect(await subject.receive('normal')).toEqual([]);
      });
    });

    describe('Method: sendDead', () => {
      it('puts the dead letter on the DLQ of its priority only, with the attributes the admin CLI reads', async () => {
        const l = letter();
        await queue.sendDead(l);
        const got = await subject.receive('low', { dead: true });
        expect(got).toHaveLength(1);
        expect(JSON.parse(got[0]?.body ?? 'null')).toStrictEqual(l);
        expect(got[0]?.attributes).toStrictEqual({
          [A.taskId]: string(taskId),
          [A.type]: string('send_email'),
          [A.priority]: string('low'),
          [A.attempts]: { dataType: 'Number', value: '3' },
          [A.failedAt]: string('2030-01-01T00:00:10.000Z'),
          [A.error]: string('downstream is down'),
        });
        await othersEmpty({ priority: 'low', dead: true });
      });

      it('gives the reason as the error attribute when there is no last error', async () => {
        const { last_error: _none, ...withoutError } = letter({ priority: 'high', reason: 'crash loop' });
        await queue.sendDead(withoutError);
        const [got] = await subject.receive('high', { dead: true });
        expect(got?.attributes[A.error]).toStrictEqual(string('crash loop'));
        expect(JSON.parse(got?.body ?? 'null')).toStrictEqual(withoutError);
      });

      it(`cuts a long error to ${MAX_ERROR_ATTRIBUTE_CHARS} characters in the attribute, keeping it whole in the body`, async () => {
        const long = `${'e'.repeat(300)}!`;
        const l = letter({ priority: 'normal', last_error: { name: 'Error', message: long, retryable: false } });
        await queue.sendDead(l);
        const [got] = await subject.receive('normal', { dead: true });
        const attribute = got?.attributes[A.error]?.value ?? '';
        expect(attribute).toHaveLength(MAX_ERROR_ATTRIBUTE_CHARS);
        expect(attribute).toBe(`${'e'.repeat(MAX_ERROR_ATTRIBUTE_CHARS - 1)}…`);
        expect((JSON.parse(got?.body ?? '{}') as DeadLetter).last_error?.message).toBe(long);
      });
    });

    describe('Method: changeVisibility', () => {
      it('0 makes a received message visible again at once (received a second time)', async () => {
        await queue.send('normal', message(), { delaySeconds: 0, type: 'job' });
        const [first] = await subject.receive('normal', { visibilitySeconds: 30 });
        expect(await subject.receive('normal')).toEqual([]);
        await queue.changeVisibility('normal', first?.receiptHandle ?? '', 0);
        const again = await subject.receive('normal');
        expect(again).toHaveLength(1);
        expect(again[0]?.body).toBe(first?.body);
        expect(again[0]?.receiveCount).toBe(2);
      });

      it('extends the invisibility of a received message to the given seconds from now', async () => {
        await queue.send('high', message(), { delaySeconds: 0, type: 'job' });
        const [first] = await subject.receive('high', { visibilitySeconds: 1 });
        await queue.changeVisibility('high', first?.receiptHandle ?? '', 3);
        await subject.elapse(1600); // past the receive's own 1 s
        expect(await subject.receive('high')).toEqual([]);
        await subject.elapse(2000); // past the 3 s
        expect(await subject.receive('high')).toHaveLength(1);
      });

      it('throws MessageGoneError for the handle of a message deleted since', async () => {
        await queue.send('low', message(), { delaySeconds: 0, type: 'job' });
        const [got] = await subject.receive('low');
        await subject.delete('low', got?.receiptHandle ?? '');
        const err = await rejection(queue.changeVisibility('low', got?.receiptHandle ?? '', 10));
        expect(err).toBeInstanceOf(MessageGoneError);
        expect(err).toBeInstanceOf(QueueError);
      });

      it('throws MessageGoneError for a receipt handle that never was one', async () => {
        await expect(queue.changeVisibility('normal', 'not-a-receipt-handle', 10)).rejects.toBeInstanceOf(
          MessageGoneError,
        );
      });

      it('throws MessageGoneError for the handle of a message on another priority queue', async () => {
        await queue.send('high', message(), { delaySeconds: 0, type: 'job' });
        const [got] = await subject.receive('high');
        await expect(queue.changeVisibility('low', got?.receiptHandle ?? '', 10)).rejects.toBeInstanceOf(
          MessageGoneError,
        );
      });
    });

    describe('Method: changeVisibilityMany', () => {
      it('changes each entry (one hidden longer, one visible at once) and reports none failed', async () => {
        const other = message({ task_id: `t_${randomUUID()}` });
        await queue.send('normal', message(), { delaySeconds: 0, type: 'job' });
        await queue.send('normal', other, { delaySeconds: 0, type: 'job' });
        const got = await subject.receive('normal', { visibilitySeconds: 1 });
        expect(got).toHaveLength(2);
        const [held, released] = got as [ReceivedTaskMessage, ReceivedTaskMessage];
        const many = queue.changeVisibilityMany?.bind(queue);
        if (many === undefined) throw new Error(`${name} has no changeVisibilityMany`);
        expect(
          await many('normal', [
            { receiptHandle: held.receiptHandle, seconds: 3 },
            { receiptHandle: released.receiptHandle, seconds: 0 },
          ]),
        ).toEqual([]);
        expect((await subject.receive('normal')).map((m) => m.body)).toEqual([released.body]);
        await subject.elapse(1600); // past the receive's own 1 s
        expect(await subject.receive('normal')).toEqual([]);
        await subject.elapse(2000); // past the 3 s
        expect((await subject.receive('normal')).map((m) => m.body)).toEqual([held.body]);
      });

      it('reports the entry whose message was deleted since as MessageGoneError, the very entry passed, and changes the rest', async () => {
        await queue.send('low', message(), { delaySeconds: 0, type: 'job' });
        await queue.send('low', message({ task_id: `t_${randomUUID()}` }), { delaySeconds: 0, type: 'job' });
        const [gone, kept] = (await subject.receive('low', { visibilitySeconds: 30 })) as [
          ReceivedTaskMessage,
          ReceivedTaskMessage,
        ];
        await subject.delete('low', gone.receiptHandle);
        const goneEntry = { receiptHandle: gone.receiptHandle, seconds: 0 };
        const failed = await queue.changeVisibilityMany?.('low', [
          goneEntry,
          { receiptHandle: kept.receiptHandle, seconds: 0 },
        ]);
        expect(failed).toHaveLength(1);
        expect(failed?.[0]?.entry).toBe(goneEntry);
        expect(failed?.[0]?.error).toBeInstanceOf(MessageGoneError);
        expect((await subject.receive('low')).map((m) => m.body)).toEqual([kept.body]);
      });
    });

    describe('Errors: the service cannot be reached', () => {
      const unreachable = (): TaskQueue => {
        if (subject.unreachable === undefined) throw new Error('the queue under test gives no unreachable queue');
        return subject.unreachable();
      };

      partCase(
        'unreachable',
        'every method throws QueueUnavailableError (retryable); send and sendDead name the task',
        async () => {
          const down = unreachable();
          const sent = await rejection(down.send('normal', message(), { delaySeconds: 0, type: 'job' }));
          expect(sent).toBeInstanceOf(QueueUnavailableError);
          expect((sent as QueueUnavailableError).retryable).toBe(true);
          expect((sent as QueueUnavailableError).taskId).toBe(taskId);
          const dead = await rejection(down.sendDead(letter()));
          expect(dead).toBeInstanceOf(QueueUnavailableError);
          expect((dead as QueueUnavailableError).taskId).toBe(taskId);
          const cv = await rejection(down.changeVisibility('normal', 'any-handle', 10));
          expect(cv).toBeInstanceOf(QueueUnavailableError);
          expect(cv).not.toBeInstanceOf(MessageGoneError);
        },
      );

      partCase(
        'unreachable',
        'sendMany does not throw: it reports every entry failed, retryable, naming its task, so exactly those can be retried',
        async () => {
          const down = unreachable();
          const entries = Array.from({ length: 12 }, (_, i) => ({
            message: message({ task_id: `${taskId}-${i}` }),
            delaySeconds: 0,
            type: 'job',
          }));
          const failed = await down.sendMany('high', entries);
          expect(failed.map((f) => f.entry)).toEqual(entries);
          failed.forEach((f, i) => {
            expect(f.entry).toBe(entries[i]);
            expect(f.error).toBeInstanceOf(QueueUnavailableError);
            expect(f.error.retryable).toBe(true);
            expect(f.error.taskId).toBe(`${taskId}-${i}`);
          });
        },
      );
    });
  });
}
