/**
 * How far ahead of "now" a rate start is asked for: the configured lead, or more when the
 * limits store answers slowly. Pure.
 *
 * @module
 */
import { LimitDefinitionError } from './errors.js';

/**
 * A start is granted for a time the store picks, and its answer comes one round trip later; a
 * start already past when the answer comes is forfeited (used late it would sit closer than T to
 * the next start, which another worker uses on time). So a lead shorter than the store's round
 * trip wastes the rate: on a store answering in ~200 ms, a fixed 50 ms lead forfeited nearly
 * every start, retakes 50 and 100 ms ahead were late too, and a 20/s limit ran 0.3 tasks a second
 * (moto under the flow-control suite's three workers).
 *
 * The round trip of each rate take is measured and smoothed as TCP smooths its round-trip time
 * (RFC 6298: `srtt`, `rttvar`, gains 1/8 and 1/4); the lead is `max(floor, srtt + 4 · rttvar)`,
 * at most `cap`. Only the store's answer is learnt, not the rest of the path to the start (the
 * claim write, the hold): a longer lead makes the task hold its concurrency slots longer before
 * the start (slots in use = rate × (lead + duration)), and a start missed after the claim is
 * taken again, ahead by this same lead (`Limiter.waitForStart`).
 *
 * @example
 * const lead = new StartLead(50, 15_000);
 * lead.observe(180); // a take answered in 180 ms
 * lead.ms;           // 180 + 4 · 90 = 540
 */
export class StartLead {
  private srtt: number | undefined;
  private rttvar = 0;

  /**
   * @param floorMs the configured lead: never less (0 when nothing can be waited for)
   * @param capMs never more (a lead keeps a poller waiting and, with slots, holds them early)
   * @throws LimitDefinitionError (field `leadMs`) unless 0 <= floor <= cap
   */
  constructor(
    private readonly floorMs: number,
    private readonly capMs: number,
  ) {
    if (!(floorMs >= 0) || !(capMs >= floorMs)) {
      throw new LimitDefinitionError('leadMs', `must be >= 0 and at most its cap ${capMs}, got ${floorMs}`);
    }
  }

  /** The lead to ask with now, ms. */
  get ms(): number {
    const learnt = this.srtt === undefined ? 0 : this.srtt + 4 * this.rttvar;
    return Math.min(this.capMs, Math.max(this.floorMs, learnt));
  }

  /** One rate take's round trip to the store, ms. */
  observe(rttMs: number): void {
    if (!Number.isFinite(rttMs) || rttMs < 0) return;
    if (this.srtt === undefined) {
      this.srtt = rttMs;
      this.rttvar = rttMs / 2;
      return;
    }
    this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - rttMs);
    this.srtt = 0.875 * this.srtt + 0.125 * rttMs;
  }
}
