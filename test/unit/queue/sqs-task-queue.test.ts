/**
 * `SqsTaskQueue` against a mocked SQS client (aws-sdk-client-mock): the exact requests and the
 * error mapping. What SQS makes of them is checked on emulators by `test/contract/sqs-task-queue.test.ts`.
 */
import {
  ChangeMessageVisibilityCommand,
  MessageNotInflight,
  QueueDoesNotExist,
  ReceiptHandleIsInvalid,
  RequestThrottled,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
  SQSServiceException,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { MessageGoneError, QueueRejectedError, QueueUnavailableError } from '../../../shared/task/queue-errors.js';
import type { DeadLetter, TaskMessage } from '../../../shared/task/message.js';
import { SqsTaskQueue } from '../../../shared/aws/sqs-task-queue.js';
import type { OutgoingMessage } from '../../../shared/task/task-queue.js';

const URLS = {
  queues: { high: 'https://sqs/q-high', normal: 'https://sqs/q-normal', low: 'https://sqs/q-low' },
  deadLetterQueues: {
    high: 'https://sqs/q-high-dlq',
    normal: 'https://sqs/q-normal-dlq',
    low: 'https://sqs/q-low-dlq',
  },
};
const sqs = mockClient(SQSClient);
const client = new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } });
const queue = new SqsTaskQueue(client, URLS);

beforeEach(() => {
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
  sqs.on(ChangeMessageVisibilityCommand).resolves({});
});
afterAll(() => {
  sqs.restore();
  client.destroy();
});

const message: TaskMessage = { task_id: 't_1', dispatch_id: 'd_1', timeout_seconds: 60 };
const letter = (o: Partial<DeadLetter> = {}): DeadLetter => ({
  task_id: 't_1',
  dispatch_id: 'd_1',
  type: 'send_email',
  priority: 'high',
  attempts: 5,
  reason: 'attempts exhausted',
  last_error: { name: 'HttpError', message: 'downstream is down', retryable: true, code: 'HTTP_503' },
  failed_at: '2030-01-01T00:00:00.000Z',
  ...o,
});
const str = (StringValue: string) => ({ DataType: 'String', StringValue });
const sent = () => sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input);

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => expect.fail(`expected a rejection, got ${JSON.stringify(v)}`),
    (err: unknown) => err,
  );
}

const sqsError = (name: string, status = 400): SQSServiceException =>
  new SQSServiceException({
    name,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
    message: `${name}!`,
  });

describe('Class: SqsTaskQueue', () => {
  describe('Method: send', () => {
    it.each(['high', 'normal', 'low'] as const)(
      'sends to the %s queue with the JSON body, the delay and the task attributes',
      async (priority) => {
        await queue.send(priority, message, { delaySeconds: 30, type: 'make_thumbnails' });
        expect(sent()).toEqual([
          {
            QueueUrl: URLS.queues[priority],
            MessageBody: JSON.stringify(message),
            DelaySeconds: 30,
            MessageAttributes: {
              'kaj-task-id': str('t_1'),
              'kaj-type': str('make_thumbnails'),
              'kaj-priority': str(priority),
            },
          },
        ]);
      },
    );

    it.each([
      [0, 0],
      [0.2, 1],
      [14.01, 15],
      [900, 900],
      [901, 900],
      [31_536_000, 900],
      [-3, 0],
    ])('sends a delay of %s s as DelaySeconds %s (whole seconds, 0-900)', async (delaySeconds, expected) => {
      await queue.send('normal', message, { delaySeconds, type: 'job' });
      expect(sent()[0]?.DelaySeconds).toBe(expected);
    });

    it('sends an empty type as "-" (SQS rejects empty attribute values)', async () => {
      await queue.send('low', message, { delaySeconds: 0, type: '' });
      expect(sent()[0]?.MessageAttributes?.['kaj-type']).toEqual(str('-'));
    });

    it.each<[string, unknown]>([
      ['QueueDoesNotExist', new QueueDoesNotExist({ message: 'no queue', $metadata: {} })],
      ['RequestThrottled', new RequestThrottled({ message: 'slow down', $metadata: {} })],
      ['InternalError', sqsError('InternalError', 500)],
      ['TimeoutError', Object.assign(new Error('timed out'), { name: 'TimeoutError' })],
      ['Error', 'not even an Error'],
    ])(
      'maps any failure (%s) to QueueUnavailableError naming the priority, with the task id and the cause',
      async (name, cause) => {
        sqs.on(SendMessageCommand).callsFake(() => Promise.reject(cause));
        const err = await rejection(queue.send('high', message, { delaySeconds: 0, type: 'job' }));
        expect(err).toBeInstanceOf(QueueUnavailableError);
        expect(err).toMatchObject({
          retryable: true,
          taskId: 't_1',
          cause,
          message: `SQS SendMessage to high failed: ${name}`,
        });
      },
    );
  });

  describe('Method: sendMany', () => {
    const entries = (n: number, o: Partial<OutgoingMessage> = {}): OutgoingMessage[] =>
      Array.from({ length: n }, (_, i) => ({
        message: { task_id: `t_${i}`, dispatch_id: `d_${i}`, timeout_seconds: 60 },
        delaySeconds: 0,
        type: 'job',
        ...o,
      }));
    const batches = () => sqs.commandCalls(SendMessageBatchCommand).map((c) => c.args[0].input);
    /** Answers every batch as SQS does when all its entries were sent. */
    const allSent = () =>
      sqs.on(SendMessageBatchCommand).callsFake(async (input: { Entries: { Id: string }[] }) => ({
        Successful: input.Entries.map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}`, MD5OfMessageBody: '' })),
        Failed: [],
      }));

    it('sends one SendMessageBatch per 10 entries to the priority queue, each entry as send would send it', async () => {
      allSent();
      const list = entries(23, { delaySeconds: 14.01, type: 'make_thumbnails' });
      expect(await queue.sendMany('low', list)).toEqual([]);
      expect(batches().map((b) => [b.QueueUrl, b.Entries?.length])).toEqual([
        [URLS.queues.low, 10],
        [URLS.queues.low, 10],
        [URLS.queues.low, 3],
      ]);
      expect(batches()[2]?.Entries?.[0]).toEqual({
        Id: '0',
        MessageBody: JSON.stringify(list[20]?.message),
        DelaySeconds: 15,
        MessageAttributes: {
          'kaj-task-id': str('t_20'),
          'kaj-type': str('make_thumbnails'),
          'kaj-priority': str('low'),
        },
      });
      expect(new Set(batches()[0]?.Entries?.map((e) => e.Id)).size).toBe(10);
      expect(sent()).toEqual([]);
    });

    it('sends no request for no entries', async () => {
      expect(await queue.sendMany('high', [])).toEqual([]);
      expect(sqs.calls()).toHaveLength(0);
    });

    it('reports the entries SQS failed, the very objects given: a sender fault as QueueRejectedError, else QueueUnavailableError', async () => {
      sqs.on(SendMessageBatchCommand).resolves({
        Successful: [{ Id: '0', MessageId: 'm', MD5OfMessageBody: '' }],
        Failed: [
          { Id: '1', Code: 'InternalError', SenderFault: false, Message: 'try again' },
          { Id: '2', Code: 'InvalidMessageContents', SenderFault: true, Message: 'bad character' },
        ],
      });
      const list = entries(4);
      const failed = await queue.sendMany('high', list);
      expect(failed.map((f) => f.entry)).toEqual([list[1], list[2], list[3]]);
      expect(failed[0]?.entry).toBe(list[1]);
      expect(failed[0]?.error).toBeInstanceOf(QueueUnavailableError);
      expect(failed[0]?.error).toMatchObject({
        retryable: true,
        taskId: 't_1',
        message: 'SQS SendMessageBatch to high failed for task t_1: InternalError: try again',
      });
      expect(failed[1]?.error).toBeInstanceOf(QueueRejectedError);
      expect(failed[1]?.error).toMatchObject({ retryable: false, taskId: 't_2' });
      // Neither sent nor failed in the answer: not confirmed, so reported (retryable).
      expect(failed[2]?.error).toBeInstanceOf(QueueUnavailableError);
      expect(failed[2]?.error.message).toContain('no result for the entry');
    });

    it('reports every entry of a batch whose request failed, with the cause; the other batches are sent', async () => {
      const cause = new RequestThrottled({ message: 'slow down', $metadata: {} });
      let call = 0;
      sqs.on(SendMessageBatchCommand).callsFake(async (input: { Entries: { Id: string }[] }) => {
        call += 1;
        if (call === 2) throw cause;
        return { Successful: input.Entries.map((e) => ({ Id: e.Id, MessageId: 'm', MD5OfMessageBody: '' })) };
      });
      const list = entries(25);
      const failed = await queue.sendMany('normal', list);
      expect(failed.map((f) => f.entry)).toEqual(list.slice(10, 20));
      for (const f of failed) {
        expect(f.error).toBeInstanceOf(QueueUnavailableError);
        expect(f.error).toMatchObject({
          cause,
          taskId: f.entry.message.task_id,
          message: 'SQS SendMessageBatch to normal failed: RequestThrottled',
        });
      }
    });
  });

  describe('Method: sendDead', () => {
    it('sends the letter to the DLQ of its priority, without delay, with the attributes the admin CLI reads', async () => {
      const l = letter();
      await queue.sendDead(l);
      expect(sent()).toEqual([
        {
          QueueUrl: URLS.deadLetterQueues.high,
          MessageBody: JSON.stringify(l),
          MessageAttributes: {
            'kaj-task-id': str('t_1'),
            'kaj-type': str('send_email'),
            'kaj-priority': str('high'),
            'kaj-attempts': { DataType: 'Number', StringValue: '5' },
            'kaj-failed-at': str('2030-01-01T00:00:00.000Z'),
            'kaj-error': str('downstream is down'),
          },
        },
      ]);
    });

    it('uses the reason as kaj-error without a last error, and "-" for an empty one', async () => {
      const { last_error: _none, ...noError } = letter({ priority: 'low', reason: 'crash loop' });
      await queue.sendDead(noError);
      await queue.sendDead({ ...noError, reason: '', type: '' });
      expect(
        sent().map((i) => [i.QueueUrl, i.MessageAttributes?.['kaj-error'], i.MessageAttributes?.['kaj-type']]),
      ).toEqual([
        [URLS.deadLetterQueues.low, str('crash loop'), str('send_email')],
        [URLS.deadLetterQueues.low, str('-'), str('-')],
      ]);
    });

    it('cuts kaj-error to 256 characters ending in an ellipsis; the body keeps the whole message', async () => {
      const long = 'x'.repeat(400);
      const l = letter({ last_error: { name: 'Error', message: long, retryable: false } });
      await queue.sendDead(l);
      const input = sent()[0];
      expect(input?.MessageAttributes?.['kaj-error']?.StringValue).toBe(`${'x'.repeat(255)}…`);
      expect(JSON.parse(input?.MessageBody ?? '{}')).toStrictEqual(l);
      sqs.resetHistory();
      await queue.sendDead(letter({ last_error: { name: 'Error', message: 'y'.repeat(256), retryable: false } }));
      expect(sent()[0]?.MessageAttributes?.['kaj-error']?.StringValue).toBe('y'.repeat(256));
    });

    it('maps a failure to QueueUnavailableError naming the DLQ, with the task id and the cause', async () => {
      const cause = new RequestThrottled({ message: 'slow down', $metadata: {} });
      sqs.on(SendMessageCommand).rejects(cause);
      const err = await rejection(queue.sendDead(letter({ priority: 'normal' })));
      expect(err).toBeInstanceOf(QueueUnavailableError);
      expect(err).toMatchObject({
        taskId: 't_1',
        cause,
        message: 'SQS SendMessage to the normal DLQ failed: RequestThrottled',
      });
    });
  });

  describe('Method: changeVisibility', () => {
    it.each([
      [60, 60],
      [0, 0],
      [10.2, 11],
      [-5, 0],
      [43_200, 43_200],
      [50_000, 43_200],
    ])(
      'sets the visibility of the message on its priority queue: %s s as %s (whole seconds, 0-43200)',
      async (seconds, expected) => {
        await queue.changeVisibility('low', 'rh-1', seconds);
        expect(sqs.commandCalls(ChangeMessageVisibilityCommand).map((c) => c.args[0].input)).toEqual([
          { QueueUrl: URLS.queues.low, ReceiptHandle: 'rh-1', VisibilityTimeout: expected },
        ]);
      },
    );

    it.each<[string, unknown]>([
      ['ReceiptHandleIsInvalid', new ReceiptHandleIsInvalid({ message: 'invalid', $metadata: {} })],
      ['MessageNotInflight', new MessageNotInflight({ message: 'not in flight', $metadata: {} })],
      ['InvalidParameterValue', sqsError('InvalidParameterValue')],
      ['AWS.SimpleQueueService.MessageNotInflight', sqsError('AWS.SimpleQueueService.MessageNotInflight')],
    ])('maps %s to MessageGoneError', async (name, cause) => {
      sqs.on(ChangeMessageVisibilityCommand).callsFake(() => Promise.reject(cause));
      const err = await rejection(queue.changeVisibility('normal', 'rh-1', 30));
      expect(err).toBeInstanceOf(MessageGoneError);
      expect(err).not.toBeInstanceOf(QueueUnavailableError);
      expect(err).toMatchObject({ cause, message: `message is no longer in flight: ${name}` });
    });

    it.each<[string, unknown]>([
      ['QueueDoesNotExist', new QueueDoesNotExist({ message: 'no queue', $metadata: {} })],
      ['RequestThrottled', new RequestThrottled({ message: 'slow down', $metadata: {} })],
      ['InternalError', sqsError('InternalError', 500)],
      ['TimeoutError', Object.assign(new Error('timed out'), { name: 'TimeoutError' })],
      ['Error', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
    ])('maps %s to QueueUnavailableError (retryable)', async (name, cause) => {
      sqs.on(ChangeMessageVisibilityCommand).callsFake(() => Promise.reject(cause));
      const err = await rejection(queue.changeVisibility('high', 'rh-1', 30));
      expect(err).toBeInstanceOf(QueueUnavailableError);
      expect(err).toMatchObject({
        retryable: true,
        cause,
        message: `SQS ChangeMessageVisibility on high failed: ${name}`,
      });
    });
  });
});
