/**
 * The two floors `bench/cpu.ts` puts beside the real wirings, so that its figures say where the
 * CPU goes: Kaj's own code (no SDK, no network), and the bare HTTP exchanges (no SDK, no Kaj).
 * What a real wiring costs beyond their sum is the AWS SDK's own work per request.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { Priority } from '../../shared/config/resources.js';
import type { DeadLetter, TaskMessage } from '../../shared/task/message.js';
import type { TaskQueue } from '../../shared/task/task-queue.js';
import type { TaskChanges, TaskCondition, TaskStore } from '../../shared/task/task-store.js';
import type { TaskRecord } from '../../shared/task/model.js';
import type { SentMessage } from './instant-endpoint.js';

/**
 * A map in memory, as naive as the instant endpoint: conditions always hold. Records are copied
 * in and out (the SDK path builds new objects too).
 */
export class MapTaskStore implements TaskStore {
  private readonly items = new Map<string, TaskRecord>();

  async create(record: TaskRecord): Promise<void> {
    this.items.set(record.task_id, structuredClone(record));
  }

  async get(taskId: string): Promise<TaskRecord | undefined> {
    const r = this.items.get(taskId);
    return r && structuredClone(r);
  }

  async update(taskId: string, changes: TaskChanges, _condition: TaskCondition): Promise<TaskRecord> {
    const r = { ...(this.items.get(taskId) as TaskRecord) } as Record<string, unknown>;
    for (const [k, v] of Object.entries(changes.set ?? {})) if (v !== undefined) r[k] = structuredClone(v);
    for (const [k, v] of Object.entries(changes.add ?? {})) if (v !== undefined) r[k] = ((r[k] as number) ?? 0) + v;
    for (const [k, v] of Object.entries(changes.append ?? {})) {
      if (v !== undefined) r[k] = [...((r[k] as unknown[]) ?? []), ...structuredClone(v)];
    }
    for (const k of changes.remove ?? []) delete r[k];
    this.items.set(taskId, r as unknown as TaskRecord);
    return structuredClone(r) as unknown as TaskRecord;
  }

  async listOutboxDue(): Promise<TaskRecord[]> {
    return [];
  }
}

/** Keeps what is sent, as the instant endpoint would. */
export class ListTaskQueue implements TaskQueue {
  private sent: SentMessage[] = [];

  constructor(private readonly queueUrls: Readonly<Record<Priority, string>>) {}

  async send(priority: Priority, message: TaskMessage, options: { delaySeconds: number; type: string }): Promise<void> {
    this.sent.push({
      queueUrl: this.queueUrls[priority],
      messageId: randomUUID(),
      body: JSON.stringify(message),
      delaySeconds: options.delaySeconds,
      attributes: { 'kaj-task-id': { DataType: 'String', StringValue: message.task_id } },
    });
  }

  async sendMany(): Promise<never[]> {
    return [];
  }

  async sendDead(_letter: DeadLetter): Promise<void> {}

  async changeVisibility(): Promise<void> {}

  drain(): SentMessage[] {
    const out = this.sent;
    this.sent = [];
    return out;
  }
}

/**
 * Bare HTTP/1.1 keep-alive POSTs of AWS-JSON-sized bodies to the instant endpoint: what the
 * network part of one AWS call costs this process, without signing, (de)serialization or middleware.
 */
export class RawAwsHttp {
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 50 });

  constructor(private readonly endpoint: string) {}

  call(target: string, body: unknown): Promise<unknown> {
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        `${this.endpoint}/`,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/x-amz-json-1.0',
            'content-length': Buffer.byteLength(payload),
            'x-amz-target': target,
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  destroy(): void {
    this.agent.destroy();
  }
}
