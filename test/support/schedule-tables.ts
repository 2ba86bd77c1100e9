/**
 * A schedules table on an emulator target, for suites that test `DynamoScheduleStore` without
 * the rest of the runtime (no queues): made from the runtime's own definition
 * (`createSchedulesTable` of local/schedules-table.ts, from shared/config/resources.ts).
 *
 * @module
 */
import { createSchedulesTable, deleteSchedulesTable } from '../../local/schedules-table.js';
import { resourceNames } from '../../shared/config/resources.js';
import { startTableOnTarget, type TableOnTarget } from './table-on-target.js';
import type { Target } from './targets.js';
import { uniquePrefix } from '../../testing/wait.js';

/** A schedules table made by {@link startSchedulesTable}. */
export type SchedulesTableOnTarget = TableOnTarget;

/**
 * Starts `target` (for the embedded target: dynalite in this process) and makes a schedules table
 * with a unique name on it (`<tag>-<pid>-<random>-schedules`).
 */
export function startSchedulesTable(target: Target, tag = 'schedules'): Promise<SchedulesTableOnTarget> {
  return startTableOnTarget(target, resourceNames(uniquePrefix(tag)).schedules, {
    create: createSchedulesTable,
    remove: deleteSchedulesTable,
  });
}
