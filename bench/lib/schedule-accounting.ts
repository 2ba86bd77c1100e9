/**
 * The schedules table's DynamoDB requests billed by AWS's rules: the `ScheduleStore` counterpart of
 * `AccountingTaskStore`, with the same rules and the same code (`dynamo-accounting.ts`: item sizes,
 * write units by the larger image, GSI writes by the sparse index's put / delete / move / update,
 * read units by consistency, a Query by the projected entries it returns), recorded in a
 * `DynamoLedger` (an op's `taskId` holds the schedule's name).
 *
 * The tick and the schedule PUT only read, write and query; `delete` and `list` (DeleteItem, Scan)
 * are forwarded unbilled and counted in {@link AccountingScheduleStore.unbilled}, so a bench can
 * check that none happened where it bills.
 *
 * @module
 */
import type { ScheduleRecord } from '../../shared/schedule/model.js';
import { ScheduleVersionConflictError } from '../../shared/schedule/store-errors.js';
import type {
  ScheduleDueEntry,
  SchedulePage,
  ScheduleReadOptions,
  ScheduleStore,
} from '../../shared/schedule/schedule-store.js';
import {
  type DynamoLedger,
  failedWriteCost,
  type Item,
  queryBytes,
  type TableModel,
  withoutUndefined,
} from './dynamo-accounting.js';

export class AccountingScheduleStore implements ScheduleStore {
  /** Requests forwarded without a bill (DeleteItem, Scan). */
  readonly unbilled = { DeleteItem: 0, Scan: 0 };

  constructor(
    private readonly inner: ScheduleStore,
    private readonly table: TableModel,
    readonly ledger: DynamoLedger,
    /** The index `listDue` queries. */
    private readonly dueIndex: string,
  ) {}

  async get(name: string, options: ScheduleReadOptions = {}): Promise<ScheduleRecord | undefined> {
    const consistent = options.consistent ?? true;
    const record = await this.inner.get(name, options);
    this.ledger.read(name, record, consistent);
    return record;
  }

  async put(record: ScheduleRecord, expectedVersion: number | 'absent'): Promise<void> {
    const before = await this.peek(record.name);
    const attempted = withoutUndefined(record) as Item;
    try {
      await this.inner.put(record, expectedVersion);
    } catch (err) {
      const conflict = err instanceof ScheduleVersionConflictError;
      const existing = conflict ? ((err.current as Item | undefined) ?? before) : undefined;
      this.ledger.failed(
        'PutItem',
        record.name,
        conflict ? failedWriteCost(existing, attempted) : 0,
        conflict ? `version ${expectedVersion} failed` : `error: ${err instanceof Error ? err.name : err}`,
        conflict,
      );
      throw err;
    }
    const after = (await this.peek(record.name)) ?? attempted;
    const label = before === undefined ? 'put new schedule' : `put version ${record.version}`;
    this.ledger.written('PutItem', record.name, before, after, this.table, label);
  }

  async delete(name: string, expectedVersion: number): Promise<void> {
    this.unbilled.DeleteItem += 1;
    await this.inner.delete(name, expectedVersion);
  }

  async listDue(
    partition: string,
    dueBy: number,
    limit: number,
    cursor?: string,
  ): Promise<SchedulePage<ScheduleDueEntry>> {
    const page = await this.inner.listDue(partition, dueBy, limit, cursor);
    const index = this.table.indexes.find((i) => i.name === this.dueIndex);
    const bytes = await queryBytes(page.items, this.table, index, (e) => this.peek(String(e.name)));
    this.ledger.query(`${this.dueIndex} ${partition}`, page.items.length, bytes);
    return page;
  }

  async list(limit: number, cursor?: string): Promise<SchedulePage> {
    this.unbilled.Scan += 1;
    return this.inner.list(limit, cursor);
  }

  private async peek(name: string): Promise<Item | undefined> {
    return (await this.inner.get(name, { consistent: true })) as Item | undefined;
  }
}
