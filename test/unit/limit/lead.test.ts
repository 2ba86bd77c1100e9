import { describe, expect, it } from 'vitest';
import { StartLead } from '../../../shared/limit/lead.js';

describe('Class: StartLead', () => {
  it('is the floor until a path longer than it is measured', () => {
    const lead = new StartLead(50, 15_000);
    expect(lead.ms).toBe(50);
    lead.observe(20);
    expect(lead.ms).toBe(50);
  });

  it('rises at once to a longer path, with 25 % headroom, and never past the cap', () => {
    const lead = new StartLead(50, 1_000);
    lead.observe(200);
    expect(lead.ms).toBe(250);
    lead.observe(900);
    expect(lead.ms).toBe(1_000);
  });

  it('comes down slowly: one fast path after a slow spell keeps most of the lead', () => {
    const lead = new StartLead(0, 15_000);
    lead.observe(400);
    lead.observe(0);
    expect(lead.ms).toBeCloseTo(400 * 0.95 * 1.25, 6);
    for (let i = 0; i < 200; i += 1) lead.observe(10);
    expect(lead.ms).toBeLessThan(13);
    expect(lead.ms).toBeGreaterThanOrEqual(12.5);
  });

  it('ignores what cannot be a path (negative, NaN, Infinity)', () => {
    const lead = new StartLead(5, 100);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) lead.observe(bad);
    expect(lead.ms).toBe(5);
  });

  it('refuses a floor above its cap or below 0', () => {
    expect(() => new StartLead(10, 5)).toThrow(RangeError);
    expect(() => new StartLead(-1, 5)).toThrow(RangeError);
  });
});
