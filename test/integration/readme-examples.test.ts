/**
 * The shell examples of the README and the docs, run as written against a local runtime started
 * the way a reader starts it (`npm start`), so that an example that stops working fails the suite.
 *
 * The rules (each one is code below, and a documentation change that breaks one fails a test):
 *
 * 1. Where ({@link SOURCES}): the README's `## Quick start`; all of `docs/api.md` and
 *    `docs/schedules.md`; the `## A first look…` section of `docs/operations.md` (a section's
 *    `###` subsections included); fenced blocks tagged `sh` or `console`, in that order. Other
 *    sections talk to AWS (Deploy) or to a runtime of their own (the operations walkthrough).
 * 2. What a command is: in a `sh` block, every line that is not blank and not a `#` comment
 *    (the comments show output); in a `console` block, every line after a `$ ` prompt (the other
 *    lines are captured output). A line ending in `\`, or inside an open quote, continues the
 *    command. A trailing `# comment` is left to bash.
 * 3. Not run, by an explicit rule ({@link NOT_RUN}): `npm install|ci|start|test` (this test starts
 *    the runtime itself, as `npm start -- --port N --in-memory`), and anything that needs AWS
 *    (`--stack`, `cdk`, `awscurl`, `aws …`, `curl --aws-sigv4`). Every other command must be a `curl` to the local
 *    runtime or an `npx kaj … --local`; anything else fails the test until a rule says otherwise.
 * 4. Substitutions: `127.0.0.1:3000` and `localhost:3000` become the runtime's port; `$URL` is set in
 *    the environment to the runtime's base URL; a task id in a command — written out
 *    (`t_` + 32 hex digits) or elided (`t_5c…`) — stands for the task the examples submitted last,
 *    whose id the test takes from the `task_id` of the latest output that had one.
 * 5. Success: exit status 0, and for `curl` an HTTP status 2xx (read through a `.curlrc`
 *    `write-out`, so the command text is unchanged).
 * 6. Pace: a reader who reads the shown output runs the next command seconds later, so before each
 *    command the test waits (at most 30 s) until the tasks submitted earlier in the same block
 *    have finished (succeeded, failed or cancelled).
 * 7. Shown results: in a `console` block, a shown output line that states a result — `status: …`,
 *    `selected N: …`, `dry run: selected N: …` — must appear in the command's real output.
 *
 * The runtime runs in a copy of the working tree (without `.git`, `.kaj/`, `cdk.out/`; with a link to
 * `node_modules`) — a fresh clone after `npm install` — so that this repository's `.kaj/` is untouched.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../tasks/index.js';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Rule 1: the files whose examples run, in this order, and which of their `##` sections (all when absent). */
const SOURCES: readonly { readonly file: string; readonly sections?: readonly string[] }[] = [
  { file: 'README.md', sections: ['Quick start'] },
  { file: 'docs/api.md' },
  { file: 'docs/schedules.md' },
  { file: 'docs/operations.md', sections: ['A first look: replay an outage against `npm start`'] },
];
/** Top-level entries a fresh clone after `npm install` would not have (or has as a link). */
const NOT_COPIED = new Set(['.git', '.kaj', 'cdk.out', 'coverage', '.tmp', 'node_modules']);
const FINISHED = new Set(['succeeded', 'failed', 'cancelled']);
const STATUS_MARK = '<<kaj-readme-http-status ';

interface Example {
  /** `file: section`, for the messages. */
  readonly section: string;
  readonly lang: 'sh' | 'console';
  /** Index of the fenced block among all the sources' blocks (rule 6 is per block). */
  readonly block: number;
  readonly command: string;
  /** Output lines the document shows for this command. */
  readonly shown: string[];
}

/** Rule 3: commands the test does not run, each with its reason. */
const NOT_RUN: readonly { readonly reason: string; readonly matches: (command: string) => boolean }[] = [
  {
    reason:
      'starts, installs or tests the project: the test starts the runtime itself, as `npm start -- --port N --in-memory`',
    matches: (c) => /^npm (install|ci|start|test)\b/.test(c),
  },
  {
    reason: 'needs an AWS account (a deployed stack, the CDK, SigV4 signing)',
    matches: (c) => /(^|\s)--stack\b|(^|\s)(npx )?cdk\s|^awscurl\b|^aws\s|^curl\s.*--aws-sigv4\b/s.test(c),
  },
];

/** The two kinds of example this test knows how to run (rule 3). */
const isLocalCurl = (c: string) => /^curl\s/.test(c) && /(127\.0\.0\.1|localhost):3000\b|\$URL\b|\$\{URL\}/.test(c);
const isLocalKaj = (c: string) => /^npx kaj\s/.test(c) && /(^|\s)--local\b/.test(c);

/** True while `text` ends inside a single- or double-quoted string (bash rules, simplified). */
function insideQuote(text: string): boolean {
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quote === "'") {
      if (ch === "'") quote = undefined;
    } else if (ch === '\\') {
      i++;
    } else if (quote === '"') {
      if (ch === '"') quote = undefined;
    } else if (ch === "'" || ch === '"') {
      quote = ch;
    } else if (ch === '#' && (i === 0 || /\s/.test(text[i - 1] ?? ''))) {
      // A comment: quotes after it do not count.
      const eol = text.indexOf('\n', i);
      if (eol < 0) return false;
      i = eol;
    }
  }
  return quote !== undefined;
}

/**
 * Rules 1 and 2: the commands of one file's examples, in order, from the `##` sections named
 * (all when `sections` is absent). `firstBlock` numbers the blocks on from the previous file's.
 */
function extractExamples(
  markdown: string,
  source: { readonly file: string; readonly sections?: readonly string[] },
  firstBlock = 0,
): Example[] {
  const lines = markdown.split('\n');
  const examples: Example[] = [];
  let section = '';
  let block = firstBlock - 1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const heading = /^## (.+?)\s*$/.exec(line);
    if (heading) {
      section = heading[1] ?? '';
      continue;
    }
    const fence = /^```(\w*)\s*$/.exec(line);
    if (!fence) continue;
    const lang = fence[1] ?? '';
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++) body.push(lines[i] ?? '');
    block++;
    if (source.sections !== undefined && !source.sections.includes(section)) continue;
    if (lang !== 'sh' && lang !== 'console') continue;
    let last: Example | undefined;
    for (let j = 0; j < body.length; j++) {
      const raw = body[j] ?? '';
      const isCommand = lang === 'sh' ? raw.trim() !== '' && !raw.trimStart().startsWith('#') : raw.startsWith('$ ');
      if (!isCommand) {
        if (last && raw.trim() !== '') last.shown.push(raw);
        continue;
      }
      let command = lang === 'console' ? raw.slice(2) : raw;
      while ((command.endsWith('\\') || insideQuote(command)) && j + 1 < body.length) command += `\n${body[++j] ?? ''}`;
      last = { section: `${source.file}: ${section}`, lang, block, command: command.trim(), shown: [] };
      examples.push(last);
    }
  }
  return examples;
}

/** Rule 4. */
function substitute(command: string, port: number, lastTaskId: string | undefined): string {
  let out = command.replace(/\b(127\.0\.0\.1|localhost):3000\b/g, `127.0.0.1:${port}`);
  if (/\bt_(?:[0-9a-f]{32}\b|[0-9a-f]*…)/.test(out)) {
    if (lastTaskId === undefined) throw new Error(`"${command}" names a task, but no example has submitted one yet`);
    out = out.replace(/\bt_(?:[0-9a-f]{32}\b|[0-9a-f]*…)/g, lastTaskId);
  }
  return out;
}

/** Rule 7: the shown lines that state a result. */
const RESULT_LINE = /^(status:\s|(dry run: )?selected \d+:)/;
const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** Runs one command in bash, asynchronously (the runtime's output pipes must keep draining meanwhile). */
function runBash(
  command: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.once('error', reject);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

async function waitUntil(what: string, probe: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const examples: Example[] = [];
for (const source of SOURCES) {
  const markdown = readFileSync(path.join(REPO_ROOT, source.file), 'utf8');
  for (const s of source.sections ?? [])
    if (!markdown.split('\n').includes(`## ${s}`)) throw new Error(`${source.file} has no section "## ${s}"`);
  examples.push(...extractExamples(markdown, source, (examples.at(-1)?.block ?? -1) + 1));
}
const fromFile = (file: string) => (e: { readonly section: string } | string) =>
  (typeof e === 'string' ? e : e.section).startsWith(`${file}: `);

describe('README and docs examples: extraction', () => {
  it('finds commands in each source: the README Quick start, docs/api.md, docs/schedules.md, docs/operations.md', () => {
    for (const s of SOURCES) expect(examples.filter(fromFile(s.file)).length, s.file).toBeGreaterThan(0);
  });

  it('every command is either excluded by a written rule or one this test can run against npm start', () => {
    const unknown = examples.filter(
      (e) => !NOT_RUN.some((r) => r.matches(e.command)) && !isLocalCurl(e.command) && !isLocalKaj(e.command),
    );
    expect(unknown.map((e) => `${e.section}: ${e.command}`)).toEqual([]);
  });

  it('every task type an example names is registered in tasks/index.ts', () => {
    const named = examples.flatMap((e) => [
      ...[...e.command.matchAll(/"type"\s*:\s*"([^"]+)"/g)].map((m) => m[1] ?? ''),
      ...[...e.command.matchAll(/--type[ =]([\w-]+)/g)].map((m) => m[1] ?? ''),
    ]);
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((t) => !registry.has(t))).toEqual([]);
  });

  it('the extraction rules themselves: continuation lines, open quotes, prompts, shown output', () => {
    const md = [
      '## API',
      '```sh',
      "curl -s -X POST $URL/x -H 'a: b' \\",
      '  -d \'{"type":"t",',
      '       "n":1}\'',
      '# {"task_id":"t_1…"}',
      '```',
      '## Operations',
      '```console',
      '$ npx kaj stats --local   # comment',
      'QUEUE  VISIBLE',
      '$ npx kaj task show t_ab… --local',
      'status:       succeeded',
      '```',
      '## Deploy',
      '```sh',
      'npx cdk deploy',
      '```',
    ].join('\n');
    const ex = extractExamples(md, { file: 'x.md', sections: ['API', 'Operations'] });
    expect(ex.map((e) => [e.section, e.command, e.shown])).toEqual([
      [
        'x.md: API',
        'curl -s -X POST $URL/x -H \'a: b\' \\\n  -d \'{"type":"t",\n       "n":1}\'',
        ['# {"task_id":"t_1…"}'],
      ],
      ['x.md: Operations', 'npx kaj stats --local   # comment', ['QUEUE  VISIBLE']],
      ['x.md: Operations', 'npx kaj task show t_ab… --local', ['status:       succeeded']],
    ]);
    expect(extractExamples(md, { file: 'y.md' }, 7).map((e) => [e.section, e.block])).toEqual([
      ['y.md: API', 7],
      ['y.md: Operations', 8],
      ['y.md: Operations', 8],
      ['y.md: Deploy', 9],
    ]);
    expect(
      NOT_RUN.some((r) => r.matches('curl --aws-sigv4 "aws:amz:eu-west-1:execute-api" \\\n  "$KAJ_API_URL/x"')),
    ).toBe(true);
    const id = `t_${'c'.repeat(32)}`;
    expect(substitute('curl http://127.0.0.1:3000/api/v1/tasks/t_5c…', 4321, id)).toBe(
      `curl http://127.0.0.1:4321/api/v1/tasks/${id}`,
    );
    expect(substitute(`npx kaj task show t_${'a'.repeat(32)} --local`, 1, id)).toBe(`npx kaj task show ${id} --local`);
    expect(() => substitute('npx kaj task show t_5c… --local', 1, undefined)).toThrow(/no example has submitted/);
  });
});

describe('README and docs examples: run against npm start', () => {
  let tree: string;
  let port: number;
  let runtime: ChildProcess | undefined;
  let runtimeLog = '';
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    tree = mkdtempSync(path.join(tmpdir(), 'kaj-readme-'));
    cpSync(REPO_ROOT, tree, {
      recursive: true,
      filter: (src) => {
        const rel = path.relative(REPO_ROOT, src);
        return !NOT_COPIED.has(rel.split(path.sep)[0] ?? '');
      },
    });
    symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(tree, 'node_modules'), 'dir');
    port = await freePort();
    // A reader's shell: not the npm environment `npm test` runs this file in.
    env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k) && k !== 'INIT_CWD'));
    env.URL = `http://127.0.0.1:${port}`;
    env.CURL_HOME = tree;
    writeFileSync(path.join(tree, '.curlrc'), `write-out = "\\n${STATUS_MARK}%{http_code}>>\\n"\n`);

    // detached: its own process group, so that stopping it reaches npm, tsx and node alike.
    const child = spawn('npm', ['start', '--', '--port', String(port), '--in-memory'], {
      cwd: tree,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    runtime = child;
    child.stdout?.on('data', (d: Buffer) => (runtimeLog += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (runtimeLog += d.toString()));
    await waitUntil(
      'npm start to print its banner and write .kaj/local.json',
      () => {
        if (child.exitCode !== null) throw new Error(`npm start exited with ${child.exitCode}:\n${runtimeLog}`);
        return runtimeLog.includes('Kaj is running locally') && existsSync(path.join(tree, '.kaj', 'local.json'));
      },
      90_000,
    );
  }, 120_000);

  afterAll(async () => {
    const child = runtime;
    if (child?.pid !== undefined && child.exitCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      process.kill(-child.pid, 'SIGINT');
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      }, 40_000);
      await exited;
      clearTimeout(timer);
    }
    if (tree) rmSync(tree, { recursive: true, force: true });
  }, 60_000);

  async function taskStatus(id: string): Promise<string | undefined> {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/tasks/${id}`);
    return ((await res.json()) as { status?: string }).status;
  }

  it('every command of the examples succeeds, in order', async () => {
    const ran: string[] = [];
    let lastTaskId: string | undefined;
    let submittedInBlock: { block: number; ids: string[] } = { block: -1, ids: [] };
    for (const e of examples) {
      if (NOT_RUN.some((r) => r.matches(e.command))) continue;
      if (submittedInBlock.block !== e.block) submittedInBlock = { block: e.block, ids: [] };
      for (const id of submittedInBlock.ids) {
        let status: string | undefined;
        await waitUntil(
          `task ${id} to finish before "${e.command}"`,
          async () => FINISHED.has((status = await taskStatus(id)) ?? ''),
          30_000,
        ).catch((err: Error) => {
          throw new Error(`${err.message} (status ${status})\n--- runtime log (tail)\n${runtimeLog.slice(-3000)}`);
        });
      }
      const command = substitute(e.command, port, lastTaskId);
      const run = await runBash(command, tree, env);
      const where = `${e.section}: $ ${command}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}\n--- runtime log (tail)\n${runtimeLog.slice(-3000)}`;
      expect(run.status, where).toBe(0);
      let stdout = run.stdout;
      if (isLocalCurl(e.command)) {
        const at = stdout.lastIndexOf(STATUS_MARK);
        expect(at, `no HTTP status from curl\n${where}`).toBeGreaterThanOrEqual(0);
        const status = Number(stdout.slice(at + STATUS_MARK.length, at + STATUS_MARK.length + 3));
        expect(status >= 200 && status < 300, `HTTP ${status}\n${where}`).toBe(true);
        stdout = stdout.slice(0, at);
      }
      const submitted = /"task_id"\s*:\s*"(t_[0-9a-f]{32})"/.exec(stdout)?.[1];
      if (submitted !== undefined) {
        lastTaskId = submitted;
        if (isLocalCurl(e.command) && /-X\s+POST\b/.test(e.command)) submittedInBlock.ids.push(submitted);
      }
      if (e.lang === 'console') {
        const actual = stdout.split('\n').map(squash);
        for (const shown of e.shown.filter((l) => RESULT_LINE.test(l)))
          expect(actual, `shown "${shown}"\n${where}`).toContain(squash(shown));
      }
      ran.push(`${e.section}: ${e.command.split('\n')[0]}`);
    }
    // The operations example's replay really ran (a guard against rules that skip everything).
    expect(ran.filter((r) => fromFile('docs/operations.md')(r) && r.includes('dlq redrive')).length).toBeGreaterThan(0);
    for (const s of SOURCES) expect(ran.some(fromFile(s.file)), s.file).toBe(true);
  }, 300_000);
});
