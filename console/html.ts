/**
 * HTML built from template literals where every interpolated value is escaped unless it is
 * itself {@link Html} (made by this tag or by {@link raw}). Task payloads, errors and results are
 * user data: the only way to put text in a page is through here.
 *
 * @module
 */

const HTML = Symbol('kaj.html');

/** Markup that is safe to emit as is. */
export interface Html {
  readonly [HTML]: true;
  readonly text: string;
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for an element's content or a quoted attribute value. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

/** Markup the caller vouches for (constant strings of this module's renderers, the SVG they build). */
export function raw(text: string): Html {
  return { [HTML]: true, text };
}

export function isHtml(v: unknown): v is Html {
  return typeof v === 'object' && v !== null && (v as Partial<Html>)[HTML] === true;
}

/** A value that may be interpolated: text (escaped), numbers, markup, nothing, or lists of these. */
export type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(p: Part): string {
  if (p === null || p === undefined || p === false || p === true) return '';
  if (typeof p === 'number') return Number.isFinite(p) ? String(p) : '';
  if (typeof p === 'string') return escapeHtml(p);
  if (isHtml(p)) return p.text;
  return (p as readonly Part[]).map(render).join('');
}

/** The tag: html`<td>${userText}</td>` escapes `userText`. */
export function html(strings: TemplateStringsArray, ...values: readonly Part[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += render(values[i] as Part) + (strings[i + 1] ?? '');
  return raw(out);
}

/** `attr` only when `on`: html`<option${when(sel, ' selected')}>`. */
export function when(on: boolean, markup: string): Html {
  return raw(on ? markup : '');
}
