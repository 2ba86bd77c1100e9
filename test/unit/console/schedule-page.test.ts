/**
 * The console's schedule page tells what the schedule's overlap policy does; for `replace`, the
 * window in which the old run and the new one overlap.
 */
import { describe, expect, it } from 'vitest';
import { schedulePage } from '../../../console/pages.js';
import type { ScheduleView } from '../../../shared/schedule/views.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const ctx = { label: 'x', token: 'tok', actionsAllowed: false, schedules: true, now: NOW };

function view(overlap: string): ScheduleView {
  return {
    name: 'nightly',
    owner: 'arn:aws:iam::000000000000:role/p',
    source: 'api',
    state: 'active',
    spec: { cron: '30 0 * * *', timezone: 'UTC', overlap, misfire: 'skip', type: 'echo' },
    next_times: [],
    next_fire_times: [],
    jitter_offset_seconds: 0,
    fired: 0,
    missed: 0,
    recent_runs: [],
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
  };
}

/** The page's text: its tags as spaces, spaces collapsed, apostrophes unescaped. */
const textOf = (overlap: string) =>
  schedulePage(ctx, view(overlap))
    .text.replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ')
    .replace(/ :/g, ':');

describe('console: schedule page, overlap policy', () => {
  it('replace: says the two runs overlap, and for how long (cancel poll, lease/3, one read, the handler returning)', () => {
    const text = textOf('replace');
    expect(text).toContain('Overlap replace: a time whose previous run is still going cancels that run');
    expect(text).toContain('The two overlap');
    expect(text).toContain('within the cancel poll (5 s, or lease/3 if shorter) plus one eventually consistent read');
    expect(text).toContain('the old run ends when its handler returns');
    expect(text).toContain('Use forbid or buffer_one for a handler that must never overlap itself');
  });

  it('every other policy is described too; a value the console does not know adds no line', () => {
    expect(textOf('forbid')).toContain('Overlap forbid: a time whose previous run is still going is skipped');
    expect(textOf('allow')).toContain('Overlap allow: a time whose previous run is still going starts anyway');
    expect(textOf('buffer_one')).toContain('Overlap buffer_one: a time whose previous run is still going runs once');
    expect(textOf('<b>x</b>')).not.toContain('Overlap');
  });
});
