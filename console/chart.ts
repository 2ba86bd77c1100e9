/** The overview's throughput chart: stacked bars as inline SVG (no chart library, no script). */
import { count, utcText } from './format.js';
import { type Html, html } from './html.js';
import type { ThroughputBucket } from './model.js';

const W = 600;
const H = 120;

export interface Totals {
  readonly succeeded: number;
  readonly failed: number;
  readonly retried: number;
  /** failed ÷ (succeeded + failed); `undefined` with neither. */
  readonly failureRate: number | undefined;
}

export function totals(buckets: readonly ThroughputBucket[]): Totals {
  let succeeded = 0;
  let failed = 0;
  let retried = 0;
  for (const b of buckets) {
    succeeded += b.succeeded;
    failed += b.failed;
    retried += b.retried;
  }
  return {
    succeeded,
    failed,
    retried,
    failureRate: succeeded + failed === 0 ? undefined : failed / (succeeded + failed),
  };
}

/** Bars of succeeded (bottom), retried and failed (top) per bucket; the scale is the tallest bar. */
export function throughputChart(buckets: readonly ThroughputBucket[], bucketSeconds: number): Html {
  const max = Math.max(1, ...buckets.map((b) => b.succeeded + b.failed + b.retried));
  const slot = W / Math.max(1, buckets.length);
  const bar = Math.max(1, slot - 2);
  const bars = buckets.map((b, i) => {
    const x = (i * slot + 1).toFixed(1);
    let y = H;
    const seg = (v: number, cls: string) => {
      if (v <= 0) return '';
      const h = (v / max) * (H - 4);
      y -= h;
      return html`<rect class="${cls}" x="${x}" y="${y.toFixed(1)}" width="${bar.toFixed(1)}" height="${h.toFixed(1)}"></rect>`;
    };
    const label = `${utcText(b.start)} (+${bucketSeconds / 60} min): ${count(b.succeeded)} succeeded, ${count(b.retried)} retried, ${count(b.failed)} failed`;
    return html`<g><title>${label}</title>${seg(b.succeeded, 's')}${seg(b.retried, 'r')}${seg(b.failed, 'f')}<rect x="${x}" y="0" width="${bar.toFixed(1)}" height="${H}" fill="transparent"></rect></g>`;
  });
  return html`<svg class="chart" viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="Task outcomes per ${bucketSeconds / 60} minute(s), last hour; tallest bar ${count(max)}">
<line class="axis" x1="0" y1="${H - 0.5}" x2="${W}" y2="${H - 0.5}"></line>${bars}</svg>
<p class="legend"><span><i class="s"></i>succeeded</span><span><i class="r"></i>retried</span><span><i class="f"></i>failed</span><span>tallest bar: ${count(max)}</span></p>`;
}
