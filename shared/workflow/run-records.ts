/**
 * Where Kaj's own workflow code (a pipeline's run) reads the entries recorded for its run by
 * others (`reopen`: an operator's clear): a symbol-keyed property of the workflow context, not
 * part of its public interface.
 *
 * @module
 */
import type { HistoryEntry } from './history-store.js';

export const RUN_RECORDS = Symbol('kaj.run-records');

/** What `RUN_RECORDS` gives. */
export interface RunRecords {
  /** The history read at the replay's start and written since. */
  entries(): HistoryEntry[];
}
