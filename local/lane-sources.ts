import { DEFAULT_LANE, type LaneDeclarations, laneNames } from '../shared/config/lanes.js';
import { DEFAULTS, PRIORITIES, type Priority } from '../shared/config/resources.js';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { LocalResources } from './bootstrap.js';
import { EMULATOR_REGION } from './emulators.js';
import { type EventSourceOptions, SqsEventSource } from './event-source.js';

/** One emulated event source mapping: a lane's queue of one priority, and how it is polled. */
export interface LaneSource {
  readonly lane: string;
  readonly priority: Priority;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly concurrency: number;
  readonly batchSize: number;
}

/**
 * The event sources of every lane (the default one first): their queues and concurrency, from the
 * lane declarations (`localConcurrency`, else `concurrency`) unless the options say otherwise.
 */
export function laneSources(
  resources: LocalResources,
  lanes: LaneDeclarations,
  o: {
    /** The default lane's concurrency per priority. */
    readonly concurrency?: Partial<Record<Priority, number>>;
    /** The other lanes' concurrency per priority, by lane. */
    readonly laneConcurrency?: Readonly<Record<string, Partial<Record<Priority, number>>>>;
    readonly batchSize?: number;
  },
): LaneSource[] {
  const out: LaneSource[] = [];
  for (const lane of laneNames(lanes)) {
    const declared = lane === DEFAULT_LANE ? undefined : lanes[lane];
    const queues =
      lane === DEFAULT_LANE
        ? { queueUrls: resources.queueUrls, queueArns: resources.queueArns }
        : resources.lanes?.[lane];
    if (queues === undefined) continue;
    for (const p of PRIORITIES) {
      const concurrency =
        lane === DEFAULT_LANE
          ? (o.concurrency?.[p] ?? DEFAULTS.concurrency[p])
          : (o.laneConcurrency?.[lane]?.[p] ??
            declared?.localConcurrency?.[p] ??
            declared?.concurrency?.[p] ??
            DEFAULTS.concurrency[p]);
      out.push({
        lane,
        priority: p,
        queueUrl: queues.queueUrls[p],
        queueArn: queues.queueArns[p],
        concurrency,
        batchSize: declared?.batchSize ?? o.batchSize ?? DEFAULTS.batchSize,
      });
    }
  }
  return out;
}

/**
 * The emulated event source mapping of one lane's queue (not started): invocations get the
 * consumer function's timeout, and each receive holds its messages for one lease.
 */
export function laneEventSource(
  sqs: SQSClient,
  q: LaneSource,
  o: Pick<EventSourceOptions, 'waitTimeSeconds' | 'handler' | 'logger'> & { readonly leaseSeconds: number },
): SqsEventSource {
  return new SqsEventSource({
    sqs,
    queueUrl: q.queueUrl,
    queueArn: q.queueArn,
    region: EMULATOR_REGION,
    batchSize: q.batchSize,
    maxConcurrency: q.concurrency,
    waitTimeSeconds: o.waitTimeSeconds,
    functionTimeoutMs: DEFAULTS.consumerTimeoutSeconds * 1000,
    visibilityTimeoutSeconds: o.leaseSeconds,
    handler: o.handler,
    logger: o.logger,
  });
}
