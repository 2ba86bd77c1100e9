/** The frame every console page shares: head, navigation, the target and whether actions are on. */
import { assets } from './assets.js';
import { type Html, html, type Part } from './html.js';
import { TOKEN_FIELD } from './security.js';

export type Section = 'overview' | 'tasks' | 'dead-letters' | 'schedules' | 'pipelines' | 'none';

/** What every page knows about the console it is served by. */
export interface PageContext {
  readonly label: string;
  /** The per-start token that every action form carries. */
  readonly token: string;
  readonly actionsAllowed: boolean;
  /** The deployment has a scheduler. */
  readonly schedules: boolean;
  /** The console has the deployment's pipeline service. */
  readonly pipelines?: boolean;
  readonly now: number;
}

export interface Flash {
  readonly kind: 'ok' | 'bad';
  readonly text: string;
}

const NAV: readonly [Exclude<Section, 'none'>, string, string][] = [
  ['overview', '/', 'Overview'],
  ['tasks', '/tasks', 'Tasks'],
  ['dead-letters', '/dead-letters', 'Dead letters'],
  ['schedules', '/schedules', 'Schedules'],
  ['pipelines', '/pipelines', 'Pipelines'],
];

export function layout(
  ctx: PageContext,
  o: { readonly title: string; readonly section: Section; readonly body: Part; readonly flash?: Flash },
): Html {
  const a = assets();
  const nav = NAV.filter(
    ([s]) => (s !== 'schedules' || ctx.schedules) && (s !== 'pipelines' || ctx.pipelines === true),
  );
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"historyCacheSize":0}'>
<title>${o.title} · Kaj</title>
<link rel="stylesheet" href="${a.css.path}">
<script src="${a.htmx.path}" defer></script>
<script src="${a.js.path}" defer></script>
</head>
<body hx-boost="true">
<a class="skip" href="#main">Skip to content</a>
<header>
  <a class="brand" href="/">Kaj</a>
  <nav aria-label="Console">${nav.map(
    ([s, href, text]) => html`<a href="${href}"${s === o.section ? html` aria-current="page"` : ''}>${text}</a>`,
  )}</nav>
  <span class="target">${ctx.label} ${
    ctx.actionsAllowed
      ? html`<span class="badge rw" title="cancel, redrive, purge, schedule changes, workflow signals and pipeline runs are enabled">actions on</span>`
      : html`<span class="badge ro" title="start with --allow-actions to enable cancel, redrive, purge, schedule changes, workflow signals and pipeline runs">read-only</span>`
  }</span>
</header>
<main id="main">
${o.flash === undefined ? '' : html`<p class="flash ${o.flash.kind}" role="status">${o.flash.text}</p>`}
${o.body}
</main>
<footer>Kaj console · times in your time zone (hover for UTC)</footer>
</body>
</html>`;
}

/** A POST form for one action: the token rides along; read-only consoles show it disabled. */
export function actionForm(
  ctx: PageContext,
  o: {
    readonly action: string;
    readonly label: string;
    readonly fields?: Readonly<Record<string, string>>;
    readonly danger?: boolean;
    readonly secondary?: boolean;
    readonly extra?: Part;
  },
): Html {
  const cls = o.danger ? 'danger' : o.secondary ? 'secondary' : '';
  return html`<form method="post" action="${o.action}">
<input type="hidden" name="${TOKEN_FIELD}" value="${ctx.token}">
${Object.entries(o.fields ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}${o.extra}
<button type="submit" class="${cls}"${
    ctx.actionsAllowed ? '' : html` disabled title="read-only console: start kaj ui with --allow-actions"`
  }>${o.label}</button>
</form>`;
}
