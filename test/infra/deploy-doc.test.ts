/**
 * docs/deploy.md against the code it documents, so that its route, policy and output tables
 * cannot go stale: the routes of `API_ROUTES`, the producer policy covering what `KajClient`
 * calls to submit and read, and every output of the synthesized template.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTPUT_KEYS } from '../../infra/outputs.js';
import { API_ROUTES } from '../../shared/service/api/routes.js';
import { REPO_ROOT, type SynthesizedKaj, synthKaj } from './synth.js';

const DOC = readFileSync(path.join(REPO_ROOT, 'docs/deploy.md'), 'utf8');

/** The text of the section under `heading` (up to the next heading of the same or a higher level). */
function section(heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const lines = DOC.split('\n');
  const start = lines.indexOf(heading);
  expect(start, `docs/deploy.md has no "${heading}"`).toBeGreaterThanOrEqual(0);
  const end = lines.findIndex((l, i) => i > start && new RegExp(`^#{1,${level}} `).test(l));
  return lines.slice(start + 1, end === -1 ? undefined : end).join('\n');
}

/** The cells of a Markdown table's body rows (header and separator dropped). */
function tableRows(text: string): string[][] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|\s*-/.test(l))
    .slice(1)
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
}

const unquote = (cell: string) => cell.replace(/^`|`$/g, '');

describe('docs/deploy.md, Authentication', () => {
  it('lists every route of API_ROUTES, and no other', () => {
    const documented = tableRows(section('## Authentication')).map(
      ([method = '', route = '']) => `${unquote(method)} ${unquote(route)}`,
    );
    const routes = API_ROUTES.map((r) => `${r.method} ${r.path}`);
    expect([...documented].sort()).toEqual([...routes].sort());
    expect(documented).toHaveLength(routes.length);
  });

  it("the producer policy allows every route KajClient's submit, submitMany, get and waitFor call", () => {
    const json = /```json\n([\s\S]*?)\n```/.exec(section('### Granting a producer access'))?.[1];
    expect(json, 'the policy block').toBeDefined();
    const policy = JSON.parse(json as string) as { Statement: { Action: string; Resource: string[] }[] };
    const allowed = policy.Statement.filter((s) => s.Action === 'execute-api:Invoke').flatMap((s) => s.Resource);
    // execute-api ARNs end in `<stage>/<METHOD>/<path>`; `*` matches any characters.
    const patterns = allowed.map((arn) => {
      const tail = arn.replace(/^arn:aws:execute-api:[^:]+:\d+:API_ID\/\$default/, '');
      return new RegExp(`^${tail.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
    });
    const covered = (method: string, route: string) => {
      const concrete = `/${method}${route.replace(/\{[^}]+\}/g, 't_0123')}`;
      return patterns.some((p) => p.test(concrete));
    };
    for (const name of ['submit', 'submit_batch', 'get'] as const) {
      const route = API_ROUTES.find((r) => r.name === name);
      expect(route, name).toBeDefined();
      expect(covered(route?.method ?? '', route?.path ?? ''), `${route?.method} ${route?.path}`).toBe(true);
    }
    // Least privilege: the producer does not get the schedule routes by default.
    expect(covered('PUT', '/api/v1/schedules/{name}')).toBe(false);
  });
});

describe('docs/deploy.md, the outputs table', () => {
  let synth: SynthesizedKaj;
  beforeAll(() => {
    synth = synthKaj();
  });
  afterAll(() => synth?.dispose());

  it('names every output of the synthesized stack and those only some stacks have, and no other', () => {
    const emitted = Object.keys((synth.template.toJSON() as { Outputs: Record<string, unknown> }).Outputs);
    // Emitted only by a stack with a workflow type (test/infra/history-table.test.ts).
    const outputs = [...new Set([...emitted, OUTPUT_KEYS.historyTableName])];
    const lines = DOC.split('\n');
    const start = lines.findIndex((l) => l.startsWith('| Output | Value |'));
    expect(start, 'the outputs table').toBeGreaterThanOrEqual(0);
    const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
    const documented = tableRows(lines.slice(start, end).join('\n')).flatMap(([keys = '']) =>
      keys.split('/').map((k) => unquote(k.trim())),
    );
    expect([...documented].sort()).toEqual([...outputs].sort());
  });
});
