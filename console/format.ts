/** Small formatting helpers of the console's pages. */
import { type Html, html } from './html.js';

/** `2026-12-02 14:03:07 UTC`: the same width as the local form the page script puts in its place. */
export function utcText(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/**
 * A time: UTC text in a `<time>` element; the page script shows it in the viewer's zone and keeps
 * the UTC time on hover (`title`). Without script the UTC text stays.
 */
export function timeTag(iso: string | number | undefined): Html {
  if (iso === undefined) return html`<span class="muted">—</span>`;
  const ms = typeof iso === 'number' ? iso : Date.parse(iso);
  if (!Number.isFinite(ms)) return html`${String(iso)}`;
  const utc = utcText(ms);
  return html`<time datetime="${new Date(ms).toISOString()}" title="${utc}">${utc}</time>`;
}

/** `1.2 s`, `340 ms`, `3 min 5 s`, `2 h 10 min`. */
export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
  if (s < 86_400)
    return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)} min` : ''}`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
}

/** `1,234` (fixed locale, so the server's and the page's numbers agree). */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** `512 B`, `1.4 KiB`, `2.0 MiB`. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The UTF-8 size of a JSON value as stored. */
export function jsonBytes(v: unknown): number {
  return v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');
}

/** A JSON value pretty-printed, cut at `max` characters. */
export function jsonText(v: unknown, max = 20_000): { text: string; cut: boolean } {
  const text = JSON.stringify(v, null, 2) ?? 'undefined';
  return text.length > max ? { text: `${text.slice(0, max)}\n…`, cut: true } : { text, cut: false };
}
