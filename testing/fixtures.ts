import type { APIGatewayProxyEventV2, SQSEvent, SQSRecord } from 'aws-lambda';
import { createKaj, type Kaj, type KajDeps } from '../shared/service/all-in-one.js';
import { runtimeSettings, type RuntimeSettings } from '../shared/config/settings.js';
import { TaskLifecycle } from '../shared/task/lifecycle.js';
import { FakeClock, sequenceRandom } from './doubles.js';
import { noMetrics, RecordingLogger } from '../shared/runtime/logger.js';
import type { TaskRegistry } from '../shared/task/define.js';
import type { ErrorInfo, TaskRecord } from '../shared/task/model.js';
import { MemoryTaskQueue } from './memory-task-queue.js';
import { MemoryTaskStore } from './memory-task-store.js';

/** The caller unit tests submit as. */
export const OWNER = { owner: 'test-owner' } as const;

/** The task lifecycle alone on the in-memory store and queue, a fake clock and `settings`. */
export function memoryLifecycle(settings: RuntimeSettings = runtimeSettings()) {
  const clock = new FakeClock();
  const store = new MemoryTaskStore();
  const queue = new MemoryTaskQueue({ now: () => clock.now() });
  const lifecycle = new TaskLifecycle({
    store,
    queue,
    clock,
    random: sequenceRandom([0.5]),
    logger: new RecordingLogger(),
    metrics: noMetrics,
    settings,
  });
  return { clock, store, queue, lifecycle };
}

export const QUEUE_NAMES = { high: 'unit-high', normal: 'unit-normal', low: 'unit-low' } as const;

export interface UnitKaj {
  kaj: Kaj;
  store: MemoryTaskStore;
  queue: MemoryTaskQueue;
  clock: FakeClock;
  logger: RecordingLogger;
}

/** A FakeClock that follows vitest's fake timers (`vi.advanceTimersByTimeAsync` moves both). */
export class TimerClock extends FakeClock {
  override now(): number {
    return Date.now();
  }
  override sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

/** Kaj over in-memory fakes, a fake clock and a scripted random source. */
export function unitKaj(
  registry: TaskRegistry,
  random = sequenceRandom([0.5]),
  clock: FakeClock = new FakeClock(),
  extra: Partial<KajDeps> = {},
): UnitKaj {
  const store = new MemoryTaskStore();
  const queue = new MemoryTaskQueue();
  const logger = new RecordingLogger();
  const kaj = createKaj({
    store,
    queue,
    registry,
    clock,
    random,
    logger,
    settings: runtimeSettings({ leaseSeconds: 60 }),
    queueNames: QUEUE_NAMES,
    ...extra,
  });
  return { kaj, store, queue, clock, logger };
}

let n = 0;
/** An SQS record as Lambda delivers it, for a message the fake queue recorded. */
export function sqsRecord(body: unknown, priority: keyof typeof QUEUE_NAMES = 'normal', receiveCount = 1): SQSRecord {
  n += 1;
  return lambdaSqsRecord({
    messageId: `m-${n}`,
    receiptHandle: `rh-${n}`,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    receiveCount,
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${QUEUE_NAMES[priority]}`,
  });
}

/** An SQS record as the event source hands it to Lambda; `receiveCount` 1 is a first delivery. */
export function lambdaSqsRecord(m: {
  messageId: string;
  receiptHandle: string;
  body: string;
  receiveCount: number;
  eventSourceARN: string;
}): SQSRecord {
  return {
    messageId: m.messageId,
    receiptHandle: m.receiptHandle,
    body: m.body,
    attributes: {
      ApproximateReceiveCount: String(m.receiveCount),
      SentTimestamp: '0',
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: '0',
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: m.eventSourceARN,
    awsRegion: 'us-east-1',
  };
}

export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}

/** A Lambda context with plenty of time left unless told otherwise. */
export function lambdaContext(remainingMs = 300_000) {
  return { getRemainingTimeInMillis: () => remainingMs };
}

/** An API Gateway HTTP API (payload 2.0) event, as the API function receives it. */
export function apiEvent(
  method: string,
  path: string,
  o: { body?: string; headers?: Record<string, string>; userArn?: string } = {},
): APIGatewayProxyEventV2 {
  // A query string in `path` (`/api/v1/tasks?status=failed`) is split off as API Gateway does.
  const [rawPath = path, rawQuery = ''] = path.split('?', 2);
  const query = Object.fromEntries(new URLSearchParams(rawQuery));
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: rawQuery,
    ...(rawQuery === '' ? {} : { queryStringParameters: query }),
    headers: { 'content-type': 'application/json', ...o.headers },
    requestContext: {
      accountId: '1',
      apiId: 'a',
      domainName: 'd',
      domainPrefix: 'd',
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: 'r',
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: 0,
      ...(o.userArn === undefined ? {} : { authorizer: { iam: { userArn: o.userArn } } }),
    } as APIGatewayProxyEventV2['requestContext'],
    isBase64Encoded: false,
    ...(o.body === undefined ? {} : { body: o.body }),
  };
}

/**
 * A task that died for good, as stored: `failed` at `now` after three attempts, with `error` as
 * its last error and its history's one entry; `extra` overrides any field.
 */
export function deadTaskRecord(
  taskId: string,
  now: number,
  error: ErrorInfo,
  extra: Partial<TaskRecord> = {},
): TaskRecord {
  const at = new Date(now).toISOString();
  return {
    task_id: taskId,
    type: 'send_email',
    priority: 'normal',
    status: 'failed',
    payload: {},
    attempts: 3,
    max_attempts: 5,
    timeout_seconds: 30,
    run_at: at,
    created_at: at,
    updated_at: at,
    started_at: at,
    finished_at: at,
    last_error: error,
    history: [{ attempt: 3, outcome: 'failed', finished_at: at, error }],
    fingerprint: 'f',
    lease_token: 3,
    dispatch_id: `d_${taskId}`,
    crashes: 1,
    ...extra,
  };
}
