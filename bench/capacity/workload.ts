/**
 * The reference workload: 10 M tasks a day, a 350/s peak hour, 5-second tasks, a
 * 105,000-task backlog at the start of the peak; and a seeded random source to draw it from.
 *
 * @module
 */
import { PRIORITIES, type Priority } from '../../shared/config/resources.js';

export interface Workload {
  readonly tasksPerDay: number;
  /** Arrivals per second during the peak hour. */
  readonly peakPerSecond: number;
  /** Hour of day (0-23) of the peak. */
  readonly peakHour: number;
  /** Share of arrivals per priority (sums to 1). */
  readonly mix: Readonly<Record<Priority, number>>;
  /** Mean task duration (seconds); each task's is drawn uniformly within ±`spread` of it. */
  readonly taskSeconds: number;
  readonly spread: number;
  /** Tasks already queued when the peak hour starts (split by `mix`). */
  readonly backlog: number;
}

export const SEED_WORKLOAD: Workload = {
  tasksPerDay: 10_000_000,
  peakPerSecond: 350,
  peakHour: 14,
  mix: { high: 0.1, normal: 0.8, low: 0.1 },
  taskSeconds: 5,
  spread: 0.2,
  backlog: 105_000,
};

/**
 * A business day: quiet nights, a morning ramp, a lunch dip, the afternoon peak, a long evening
 * tail. Relative arrival rates per hour; `hourlyRates` scales every hour but the peak so the day
 * totals `tasksPerDay` with the peak hour at exactly `peakPerSecond`.
 */
const DAY_SHAPE = [
  30, 22, 18, 16, 18, 28, 45, 75, 120, 165, 200, 225, 215, 270, 350, 280, 215, 165, 125, 100, 82, 65, 48, 36,
];

/** Arrivals per second for each hour of the day. */
export function hourlyRates(w: Workload): number[] {
  const peakTasks = w.peakPerSecond * 3600;
  const rest = w.tasksPerDay - peakTasks;
  if (rest <= 0) throw new RangeError('the peak hour alone exceeds the daily total');
  const shape = DAY_SHAPE.map((v, h) => (h === w.peakHour ? 0 : v));
  const shapeSum = shape.reduce((s, v) => s + v, 0);
  return shape.map((v, h) => (h === w.peakHour ? w.peakPerSecond : (v / shapeSum) * (rest / 3600)));
}

/** A small, fast, seeded PRNG (mulberry32): the same seed replays the same day. */
export class SeededRandom {
  private state: number;
  private ids = 0;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }
  /** Unique ids (task ids, dispatch ids): a counter is enough in a simulation, and cheap. */
  id(): string {
    this.ids += 1;
    return `${this.ids.toString(16).padStart(12, '0')}${Math.floor(this.next() * 0xffffffff)
      .toString(16)
      .padStart(8, '0')}`;
  }
  /** Exponential gap with the given rate (per ms). */
  exp(ratePerMs: number): number {
    return -Math.log(1 - this.next()) / ratePerMs;
  }
  priority(mix: Readonly<Record<Priority, number>>): Priority {
    let u = this.next();
    for (const p of PRIORITIES) {
      u -= mix[p];
      if (u < 0) return p;
    }
    return 'low';
  }
  /** A task duration in ms. */
  duration(w: Workload): number {
    return Math.round(w.taskSeconds * 1000 * (1 - w.spread + 2 * w.spread * this.next()));
  }
}
