/**
 * How far ahead of "now" a rate start is asked for: the limiter's measure of the path from
 * asking to starting. Pure.
 *
 * @module
 */

/** The lead asked with is the estimate times this (a path a little slower than the last still fits). */
const HEADROOM = 1.25;
/** Weight of a shorter path in the estimate: it comes down over about 1 / DECAY paths. */
const DECAY = 0.05;

/**
 * A start is granted for a time the store decides, and used only after the rest of the path:
 * the take's round trip, the slots, the claim write and the message hold. A start already past
 * when the task gets there is forfeited (used late it would sit closer than T to the next start,
 * which another worker uses on time), so asking with a lead shorter than that path wastes the
 * rate: on a store answering in 200 ms, a fixed 50 ms lead forfeited nearly every start and a
 * 20/s limit ran 0.3 tasks a second (moto, flow-control suite).
 *
 * The estimate follows the measured path: up at once to a longer one, down slowly towards
 * shorter ones (so one fast path after a slow spell does not bring the forfeits back). The lead
 * is `max(floor, estimate · 1.25)`, at most `cap`.
 *
 * @example
 * const lead = new StartLead(50, 15_000);
 * lead.observe(180); // a path from asking to starting took 180 ms
 * lead.ms;           // 225
 */
export class StartLead {
  private estimateMs = 0;

  /**
   * @param floorMs the configured lead: never less (0 when nothing can be waited for)
   * @param capMs never more (a lead keeps a poller waiting and, with slots, holds them early)
   */
  constructor(
    private readonly floorMs: number,
    private readonly capMs: number,
  ) {
    if (!(floorMs >= 0) || !(capMs >= floorMs)) {
      throw new RangeError(`a start lead needs 0 <= floor <= cap, got floor ${floorMs} and cap ${capMs}`);
    }
  }

  /** The lead to ask with now, ms. */
  get ms(): number {
    return Math.min(this.capMs, Math.max(this.floorMs, this.estimateMs * HEADROOM));
  }

  /** One measured path from asking for a start to being ready to use it, ms. */
  observe(pathMs: number): void {
    if (!Number.isFinite(pathMs) || pathMs < 0) return;
    this.estimateMs = pathMs >= this.estimateMs ? pathMs : this.estimateMs + (pathMs - this.estimateMs) * DECAY;
  }
}
