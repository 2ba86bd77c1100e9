import { outboxKey } from '../../../../shared/task/model.js';
import { describe, expect, it } from 'vitest';
import { NativeMoveUnsupportedError } from '../../../../cli/admin/errors.js';
import { nativeRedrive, type MessageMover, type MoveProgress } from '../../../../cli/admin/native.js';
import type { Priority } from '../../../../shared/config/resources.js';
import type { TaskRecord } from '../../../../shared/task/model.js';
import { deadTask, world, type World } from './fakes.js';

class FakeMover implements MessageMover {
  readonly started: [Priority, Priority, number | undefined][] = [];
  supported = true;
  /** Runs when the move "happens" (to simulate a death during the move). */
  during: (() => Promise<void>) | undefined;
  constructor(private readonly w: World) {}
  async check(): Promise<void> {
    if (!this.supported) throw new NativeMoveUnsupportedError('not implemented');
  }
  async start(source: Priority, destination: Priority, rate?: number): Promise<void> {
    this.started.push([source, destination, rate]);
    await this.during?.();
    this.w.dlq.queues[source].length = 0; // moved
  }
  async progress(): Promise<MoveProgress> {
    return { status: 'COMPLETED', moved: 1, toMove: 1 };
  }
}

const failedSource = (w: World) => ({
  failedTasks: async (p: Priority, since: number) =>
    [...w.store.items.values()].filter(
      (r) =>
        r.status === 'failed' &&
        r.priority === p &&
        r.discarded_at === undefined &&
        Date.parse(r.finished_at ?? '') >= since,
    ),
});

const deps = (w: World, mover: MessageMover) => ({
  failed: failedSource(w),
  mover,
  lifecycle: w.lifecycle,
  clock: w.clock,
  sleep: w.sleep,
});
const opts = {
  queues: ['normal'] as Priority[],
  to: 'original' as const,
  keepAttempts: false,
  actor: 'ops',
  dryRun: false,
};

describe('nativeRedrive', () => {
  it('resets every failed record first (same dispatch id, owed message), then starts the move', async () => {
    const w = world();
    const tasks = [await deadTask(w), await deadTask(w)];
    const mover = new FakeMover(w);
    let resetBeforeMove = false;
    mover.during = async () => {
      resetBeforeMove = [...w.store.items.values()].every((r) => r.status === 'queued');
    };
    const [report] = await nativeRedrive(deps(w, mover), opts);
    expect(report).toMatchObject({
      dlq: 'normal',
      destination: 'normal',
      selected: 2,
      reset: 2,
      repaired: 0,
      errors: [],
    });
    expect(resetBeforeMove).toBe(true);
    expect(mover.started).toEqual([['normal', 'normal', undefined]]);
    for (const t of tasks) {
      const r = (await w.store.get(t.task_id)) as TaskRecord;
      expect(r).toMatchObject({
        status: 'queued',
        dispatch_id: t.dispatch_id,
        attempts: 0,
        redrive_count: 1,
        outbox_pk: outboxKey('queue', 'normal', t.task_id),
      });
      expect(w.lifecycle.outboxes.sendUnconfirmed(r)).toBe(true); // the sweeper sends it if the move does not
    }
  });

  it('a task that dies while the move runs gets its dead letter written again', async () => {
    const w = world();
    await deadTask(w);
    const mover = new FakeMover(w);
    let late: TaskRecord | undefined;
    mover.during = async () => {
      w.clock.advance(1000);
      late = await deadTask(w); // its letter is in the DLQ when the move takes everything
    };
    const [report] = await nativeRedrive(deps(w, mover), opts);
    expect(report).toMatchObject({ reset: 1, repaired: 1 });
    expect(w.dlq.all().map((m) => JSON.parse(m.body).task_id)).toEqual([late?.task_id]);
    expect((await w.store.get(late!.task_id))?.status).toBe('failed');
  });

  it('changes nothing where the endpoint lacks message move tasks (moto)', async () => {
    const w = world();
    await deadTask(w);
    const mover = new FakeMover(w);
    mover.supported = false;
    await expect(nativeRedrive(deps(w, mover), opts)).rejects.toBeInstanceOf(NativeMoveUnsupportedError);
    expect(w.store.updates).toBe(0);
  });

  it('--dry-run only counts', async () => {
    const w = world();
    await deadTask(w);
    const mover = new FakeMover(w);
    const [report] = await nativeRedrive(deps(w, mover), { ...opts, dryRun: true });
    expect(report).toMatchObject({ selected: 1, reset: 0 });
    expect(mover.started).toEqual([]);
    expect(w.store.updates).toBe(0);
  });
});
