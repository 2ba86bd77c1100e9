/**
 * A history table on an emulator target, for suites that test `DynamoHistoryStore` without the rest
 * of the runtime (no queues): made from the runtime's own definition (`createHistoryTable` of
 * local/schedules-table.ts, key `run_id` + `key` from `HISTORY_TABLE_SCHEMA` of
 * shared/config/resources.ts).
 *
 * @module
 */
import { createHistoryTable, deleteSchedulesTable } from '../../local/schedules-table.js';
import { resourceNames } from '../../shared/config/resources.js';
import { startTableOnTarget, type TableOnTarget } from './table-on-target.js';
import type { Target } from './targets.js';
import { uniquePrefix } from '../../testing/wait.js';

/** A history table made by {@link startHistoryTable}. */
export type HistoryTableOnTarget = TableOnTarget;

/**
 * Starts `target` (for the embedded target: dynalite in this process) and makes a history table
 * with a unique name on it (`<tag>-<pid>-<random>-history`).
 */
export function startHistoryTable(target: Target, tag = 'history'): Promise<HistoryTableOnTarget> {
  return startTableOnTarget(target, resourceNames(uniquePrefix(tag)).history, {
    create: createHistoryTable,
    // Deletes any table by name (nothing if it is gone), not only a schedules table.
    remove: deleteSchedulesTable,
  });
}
