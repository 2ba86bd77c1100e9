/**
 * What the console reads from CloudWatch on a deployed stack: task outcomes per minute over the
 * last hour (the EMF metrics the consumer publishes, summed over task types) and the age of the
 * oldest message of each queue (SQS's own metric). One GetMetricData request per refresh.
 *
 * @module
 */
import { CloudWatchClient, GetMetricDataCommand, type MetricDataQuery } from '@aws-sdk/client-cloudwatch';
import type { Priority } from '../../shared/config/resources.js';
import { METRICS, metricsNamespace } from '../../shared/config/metrics.js';
import { clientConfig, type ClientSettings } from '../../shared/aws/wiring.js';
import type { Throughput } from '../../console/model.js';
import { BUCKET_MS, lastHour } from '../../console/throughput.js';

export interface QueueRef {
  readonly lane?: string;
  readonly priority: Priority;
  readonly url: string;
}

export interface CloudWatchReading {
  readonly throughput: Throughput;
  /** Oldest message age (seconds) by queue URL; absent when CloudWatch has no recent point. */
  readonly oldestAge: ReadonlyMap<string, number>;
}

const KINDS = [
  ['s', METRICS.succeeded],
  ['f', METRICS.failed],
  ['r', METRICS.retried],
] as const;

export class CloudWatchReader {
  private readonly cw: CloudWatchClient;
  /** The stack's own namespace (`Kaj/<stack>`): its metrics only, not another stack's. */
  private readonly namespace: string;

  constructor(settings: ClientSettings, stackName: string) {
    this.cw = new CloudWatchClient(clientConfig(settings));
    this.namespace = metricsNamespace(stackName);
  }

  async read(queues: readonly QueueRef[], now: number): Promise<CloudWatchReading> {
    const queries: MetricDataQuery[] = KINDS.map(([id, name]) => ({
      Id: id,
      Expression: `SUM(SEARCH('{"${this.namespace}",${METRICS.serviceDimension},${METRICS.taskTypeDimension}} MetricName="${name}" ${METRICS.serviceDimension}="${METRICS.serviceName}"', 'Sum', 60))`,
      Label: name,
      ReturnData: true,
    }));
    queues.forEach((q, i) => {
      queries.push({
        Id: `age${i}`,
        MetricStat: {
          Metric: {
            Namespace: 'AWS/SQS',
            MetricName: 'ApproximateAgeOfOldestMessage',
            Dimensions: [{ Name: 'QueueName', Value: q.url.slice(q.url.lastIndexOf('/') + 1) }],
          },
          Period: 60,
          Stat: 'Maximum',
        },
        ReturnData: true,
      });
    });
    const start = Math.floor(now / BUCKET_MS) * BUCKET_MS - 59 * BUCKET_MS;
    try {
      const out = await this.cw.send(
        new GetMetricDataCommand({
          MetricDataQueries: queries,
          StartTime: new Date(start),
          EndTime: new Date(now + BUCKET_MS),
          ScanBy: 'TimestampAscending',
        }),
      );
      const series = new Map<string, Map<number, number>>();
      for (const r of out.MetricDataResults ?? []) {
        const m = new Map<number, number>();
        (r.Timestamps ?? []).forEach((t, i) => {
          m.set(t.getTime(), r.Values?.[i] ?? 0);
        });
        if (r.Id !== undefined) series.set(r.Id, m);
      }
      const at = (id: string, t: number) => series.get(id)?.get(t) ?? 0;
      const oldestAge = new Map<string, number>();
      queues.forEach((q, i) => {
        const points = [...(series.get(`age${i}`)?.entries() ?? [])].sort((a, b) => b[0] - a[0]);
        const latest = points[0];
        // A point older than 5 minutes says nothing about now.
        if (latest !== undefined && now - latest[0] < 5 * 60_000) oldestAge.set(q.url, latest[1]);
      });
      return {
        throughput: {
          available: true,
          source: `CloudWatch (namespace ${this.namespace}: this stack's metrics; up to a few minutes behind)`,
          bucketSeconds: 60,
          buckets: lastHour(now, (t) => ({ succeeded: at('s', t), failed: at('f', t), retried: at('r', t) })),
        },
        oldestAge,
      };
    } catch (err) {
      return {
        throughput: {
          available: false,
          reason: `CloudWatch GetMetricData failed (${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}); the console needs cloudwatch:GetMetricData`,
        },
        oldestAge: new Map(),
      };
    }
  }

  close(): void {
    this.cw.destroy();
  }
}
