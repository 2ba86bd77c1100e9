/**
 * The active-run slots of workflow types that declare `maxActiveRuns` (pipelines): one item of the
 * limits table per type and owner (`a#<type>#<owner>`), whose holders are the active runs' ids,
 * each leased until its run's end of life (`maxRunDays`).
 *
 * A run takes a slot before its code runs (the runner records `admit#<opening>` once it has it)
 * and gives it back when its code ends (the runner, before the run's final write, so every node
 * of a pipeline has ended by then). A slot whose run ended without giving it back (its worker
 * died, the run was cancelled while waiting) is found when the item is full: its holder's task is
 * looked up, and a finished or missing run's slot is evicted. A slot is never held by a run that
 * is not running or waiting, beyond the next admission that needs it.
 *
 * @module
 */
import { forEachBounded } from '../runtime/bounded.js';
import type { Clock } from '../runtime/clock.js';
import { type LimitStore, MAX_EVICT_PER_CALL, type SlotHolders } from '../limit/limit-store.js';
import { isFinished } from '../task/state-machine.js';
import type { TaskStore } from '../task/task-store.js';

/** A run asking for (or giving back) its slot. */
export interface ActiveRun {
  readonly type: string;
  readonly owner: string;
  readonly runId: string;
  /** Its type's `maxActiveRuns`. */
  readonly max: number;
  /** Epoch ms: the run's end of life (its lease). */
  readonly leaseUntil: number;
}

/** The runner's port to the slots. */
export interface ActiveRuns {
  /** True once the run holds a slot (it may have held it already: a replay asks again). */
  admit(run: ActiveRun): Promise<boolean>;
  /** Gives the run's slot back. Idempotent. */
  release(run: Pick<ActiveRun, 'type' | 'owner' | 'runId'>): Promise<void>;
}

/** The limits-table key of a type's active-run slots for one owner. */
export function activeRunsKey(type: string, owner: string): string {
  return `a#${type}#${owner}`;
}

/** Holders looked up at once when the item is full. */
const LOOKUPS = 8;

/** The slots over the limits store, with the task store to tell ended holders from live ones. */
export function limitStoreActiveRuns(limits: LimitStore, tasks: TaskStore, clock: Clock): ActiveRuns {
  return {
    async admit(run) {
      const pk = activeRunsKey(run.type, run.owner);
      for (let round = 0; round < 2; round += 1) {
        const added = await limits.addHolder(pk, run.runId, run.leaseUntil, run.max);
        if (added.kind === 'granted' || added.holders[run.runId] !== undefined) return true;
        if (round === 1) return false;
        const ended = await endedHolders(tasks, added.holders, clock.now());
        if (Object.keys(ended).length === 0) return false;
        await limits.evictHolders(pk, ended);
      }
      return false;
    },
    async release(run) {
      await limits.removeHolder(activeRunsKey(run.type, run.owner), run.runId);
    },
  };
}

/** The holders whose lease has ended or whose run is finished or gone. */
async function endedHolders(tasks: TaskStore, holders: SlotHolders, now: number): Promise<SlotHolders> {
  const ended: Record<string, number> = {};
  const candidates = Object.entries(holders).slice(0, MAX_EVICT_PER_CALL);
  await forEachBounded(candidates, LOOKUPS, async ([runId, until]) => {
    if (until < now) {
      ended[runId] = until;
      return;
    }
    const record = await tasks.get(runId);
    if (record === undefined || isFinished(record.status)) ended[runId] = until;
  });
  return ended;
}
