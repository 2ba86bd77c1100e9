/**
 * The LocalStack scripts, without LocalStack: each parses (`bash -n`); the deploy, smoke
 * and up scripts' `--dry-run` prints the endpoints (127.0.0.1:4566, S3 path-style), `api=rest` and
 * every step in order; the commands the smoke prints exist with those flags (`kaj … --help`); the
 * probe, against a fake LocalStack health endpoint on a local port, tells "ready", "does not
 * answer", "demands a token", "no HTTP API in the free edition" and "lacks a service" apart; and
 * the compose file fails loudly, pins the image and mounts the Docker socket.
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { localstackApiUrl } from '../../../scripts/localstack-smoke-api.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const exec = promisify(execFile);
const SCRIPTS = [
  'localstack-lib.sh',
  'localstack-probe.sh',
  'localstack-up.sh',
  'localstack-deploy.sh',
  'localstack-smoke.sh',
];

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a script with bash (asynchronously: the fake server answers from this process). */
async function bash(script: string, args: string[] = [], env: Record<string, string> = {}): Promise<Run> {
  // A clean environment: no LOCALSTACK_* or AWS_* of whoever runs the tests.
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('LOCALSTACK_') && !k.startsWith('AWS_')),
  );
  try {
    const r = await exec('bash', [path.join(REPO, 'scripts', script), ...args], {
      cwd: REPO,
      env: { ...base, ...env },
      timeout: 30_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The printed commands (`+ …` lines) of a dry run. */
const commands = (r: Run) => r.stdout.split('\n').filter((l) => l.startsWith('+ '));
const indexOf = (lines: string[], needle: string) => lines.findIndex((l) => l.includes(needle));

describe('every LocalStack script parses', () => {
  it.each(SCRIPTS)('bash -n scripts/%s', async (script) => {
    // A syntax error makes bash -n exit 2: exec rejects and the test fails.
    expect(await exec('bash', ['-n', path.join(REPO, 'scripts', script)])).toEqual({ stdout: '', stderr: '' });
  });

  it('npm run local:up, deploy:localstack and localstack:smoke run them', () => {
    const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts['local:up']).toBe('bash scripts/localstack-up.sh');
    expect(pkg.scripts['deploy:localstack']).toBe('bash scripts/localstack-deploy.sh');
    expect(pkg.scripts['localstack:smoke']).toBe('bash scripts/localstack-smoke.sh');
  });
});

describe('localstack-deploy.sh --dry-run', () => {
  it('points every endpoint at 127.0.0.1:4566 (S3 path-style), probes, bootstraps, then deploys with api=rest', async () => {
    const r = await bash('localstack-deploy.sh', ['--dry-run', '-c', 'kaj:authMode=none']);
    expect(r.code).toBe(0);
    const [env, ...rest] = commands(r);
    expect(env).toContain('AWS_ENDPOINT_URL=http://127.0.0.1:4566 ');
    expect(env).toContain('AWS_ENDPOINT_URL_S3=http://127.0.0.1:4566 ');
    expect(env).toContain('AWS_S3_FORCE_PATH_STYLE=true');
    // cdklocal strips AWS_* variables it is not told to keep: path-style must survive it.
    expect(env).toMatch(/AWS_ENVAR_ALLOWLIST=\S*AWS_S3_FORCE_PATH_STYLE/);
    expect(rest).toEqual([
      '+ bash scripts/localstack-probe.sh --api rest',
      '+ npx --no-install cdklocal bootstrap aws://000000000000/us-east-1 --no-notices',
      '+ npx --no-install cdklocal deploy --require-approval never --no-notices -c kaj:api=rest -c kaj:authMode=none',
    ]);
    expect(r.stdout).not.toContain('localhost.localstack.cloud');
  });

  it('--api http deploys the HTTP API and has the probe check for it; LOCALSTACK_ENDPOINT and AWS_REGION override', async () => {
    const r = await bash('localstack-deploy.sh', ['--dry-run', '--api', 'http'], {
      LOCALSTACK_ENDPOINT: 'http://10.0.0.5:4566/',
      AWS_REGION: 'eu-west-1',
    });
    expect(r.code).toBe(0);
    const lines = commands(r);
    expect(lines[0]).toContain('AWS_ENDPOINT_URL=http://10.0.0.5:4566 ');
    expect(lines).toContain('+ bash scripts/localstack-probe.sh --api http');
    expect(lines.at(-1)).toContain('-c kaj:api=http');
    expect(lines).toContain('+ npx --no-install cdklocal bootstrap aws://000000000000/eu-west-1 --no-notices');
  });

  it('refuses an unknown API kind, and kaj:api given as a context value, naming --api', async () => {
    const bad = await bash('localstack-deploy.sh', ['--dry-run', '--api', 'soap']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--api must be http or rest, got "soap"')]);
    const ctx = await bash('localstack-deploy.sh', ['--dry-run', '-c', 'kaj:api=http']);
    expect([ctx.code, ctx.stderr]).toEqual([2, expect.stringContaining('--api rest|http')]);
    expect(commands(ctx)).toEqual([]);
  });
});

describe('localstack-smoke.sh --dry-run', () => {
  it('probe → deploy (rest, scratch) → submit signed and wait → dead letter → kaj dlq redrive → wait → destroy', async () => {
    const r = await bash('localstack-smoke.sh', ['--dry-run']);
    expect(r.code).toBe(0);
    const lines = commands(r);
    expect(lines[0]).toContain('AWS_ENDPOINT_URL=http://127.0.0.1:4566 ');
    const steps = [
      'bash scripts/localstack-probe.sh --api rest',
      'bash scripts/localstack-deploy.sh --api rest -c kaj:stackName=kaj-smoke -c kaj:authMode=iam -c kaj:retainData=false -c kaj:deletionProtection=false',
      'API_URL=$(npx --no-install tsx scripts/localstack-smoke-api.ts api-url --stack kaj-smoke --endpoint-url http://127.0.0.1:4566 )',
      'TASK=$(npx --no-install tsx scripts/localstack-smoke-api.ts submit --api-url \\<API_URL\\> --region us-east-1 --type send_email',
      'localstack-smoke-api.ts wait --api-url \\<API_URL\\> --region us-east-1 --task-id \\<TASK\\> --expect succeeded',
      'DEAD=$(npx --no-install tsx scripts/localstack-smoke-api.ts submit --api-url \\<API_URL\\> --region us-east-1 --type send_email --max-attempts 2',
      '--task-id \\<DEAD\\> --expect failed',
      'npx --no-install kaj dlq list --stack kaj-smoke --endpoint-url http://127.0.0.1:4566 --type send_email',
      'npx --no-install kaj dlq redrive --stack kaj-smoke --endpoint-url http://127.0.0.1:4566 --type send_email --keep-attempts',
      '--task-id \\<DEAD\\> --expect succeeded',
      'npx --no-install cdklocal destroy --force --no-notices -c kaj:stackName=kaj-smoke kaj-smoke',
    ];
    const at = steps.map((s) => indexOf(lines, s));
    expect(at, JSON.stringify(lines, null, 1)).not.toContain(-1);
    expect(at).toEqual([...at].sort((a, b) => a - b));
    expect(lines.at(-1)).toContain('cdklocal destroy');
    // The dead letter: two attempts, both failed by the simulated provider outage.
    expect(lines[indexOf(lines, 'DEAD=')]).toContain('transient_failures');
    expect(r.stdout).toContain('dry run: the commands above were printed, none was run');
    expect(r.stdout).not.toContain('smoke passed');
  });

  it('--auth none deploys without authorization and submits unsigned; --keep leaves the stack', async () => {
    const r = await bash('localstack-smoke.sh', ['--dry-run', '--auth', 'none', '--keep', '--stack', 'kaj-ls']);
    expect(r.code).toBe(0);
    const lines = commands(r);
    expect(lines[indexOf(lines, 'localstack-deploy.sh')]).toContain('-c kaj:authMode=none');
    expect(lines.filter((l) => l.includes('localstack-smoke-api.ts')).every((l) => !l.includes('--region'))).toBe(true);
    expect(lines.some((l) => l.includes('cdklocal destroy'))).toBe(false);
    expect(r.stdout).toContain('kept stack kaj-ls');
    const bad = await bash('localstack-smoke.sh', ['--dry-run', '--auth', 'cognito']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--auth must be iam or none')]);
  });

  it('the kaj commands it prints exist with those flags', async () => {
    const run = await bash('localstack-smoke.sh', ['--dry-run']);
    const kajLines = commands(run).filter((l) => l.startsWith('+ npx --no-install kaj '));
    expect(kajLines).toHaveLength(2);
    // The target options (--stack, --endpoint-url) are the program's, the rest the command's.
    const global = (await exec('npx', ['--no-install', 'tsx', 'cli/main.ts', '--help'], { cwd: REPO })).stdout;
    for (const line of kajLines) {
      const words = line.replace('+ npx --no-install kaj ', '').split(' ');
      const sub = words.slice(0, 2);
      const flags = words.filter((w) => w.startsWith('--'));
      const help = await exec('npx', ['--no-install', 'tsx', 'cli/main.ts', ...sub, '--help'], { cwd: REPO });
      for (const f of flags) expect(`${help.stdout}\n${global}`, `${sub.join(' ')} ${f}`).toContain(`${f} `);
    }
  }, 60_000);
});

describe('localstack-up.sh --dry-run', () => {
  it('starts the compose service, waits on 127.0.0.1:4566, then probes', async () => {
    const r = await bash('localstack-up.sh', ['--dry-run']);
    expect(r.code).toBe(0);
    expect(commands(r)).toEqual([
      '+ docker compose up -d localstack',
      '+ curl -fsS http://127.0.0.1:4566/_localstack/health',
      '+ bash scripts/localstack-probe.sh --api rest',
    ]);
  });
});

/** LocalStack's services, by the names its health endpoint uses, that the probe requires for the stack. */
function probeRequired(): string[] {
  const text = readFileSync(path.join(REPO, 'scripts/localstack-probe.sh'), 'utf8');
  const list = /^required=\(([^)]*)\)/m.exec(text)?.[1];
  expect(list).toBeDefined();
  return list!.split(/\s+/).filter((s) => s !== '');
}

function health(services: Record<string, string>, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ services, edition: 'community', version: '4.7.0', ...extra }, null, 1);
}

const allAvailable = () => Object.fromEntries([...probeRequired(), 'apigateway'].map((s) => [s, 'available']));

describe('localstack-probe.sh against a fake LocalStack', () => {
  let server: Server | undefined;
  const dirs: string[] = [];
  afterEach(async () => {
    if (server) await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
  });
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** Serves `status` and `body` on /_localstack/health (404 elsewhere); returns the endpoint. */
  async function fake(status: number, body: string): Promise<string> {
    server = createServer((req, res) => {
      if (req.url === '/_localstack/health') res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** An endpoint nothing listens on: a port just closed. */
  async function closedPort(): Promise<string> {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const { port } = s.address() as AddressInfo;
    await new Promise<void>((r) => s.close(() => r()));
    return `http://127.0.0.1:${port}`;
  }

  /** A `docker` on PATH that reports the container's state and logs as given. */
  function fakeDocker(state: string, logs: string): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'kaj-fake-docker-'));
    dirs.push(dir);
    const file = path.join(dir, 'docker');
    writeFileSync(
      file,
      `#!/usr/bin/env bash\ncase "$1" in inspect) echo '${state}' ;; logs) echo '${logs}' ;; *) exit 1 ;; esac\n`,
    );
    chmodSync(file, 0o755);
    return `${dir}:${process.env.PATH ?? ''}`;
  }

  it('ready: it answers 200 with every service the stack needs (api rest)', async () => {
    const endpoint = await fake(200, health(allAvailable()));
    const r = await bash('localstack-probe.sh', ['--api', 'rest'], { LOCALSTACK_ENDPOINT: endpoint });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`LocalStack 4.7.0 (community) answers at ${endpoint}: ready for api=rest.`);
  });

  it('"running" counts like "available"; rest is the default', async () => {
    const services = Object.fromEntries(Object.keys(allAvailable()).map((s) => [s, 'running']));
    const r = await bash('localstack-probe.sh', [], { LOCALSTACK_ENDPOINT: await fake(200, health(services)) });
    expect(r.code, r.stderr).toBe(0);
  });

  it('api http on the free edition (no apigatewayv2): exit 4, says the HTTP API needs an account and to use rest', async () => {
    const r = await bash('localstack-probe.sh', ['--api', 'http'], {
      LOCALSTACK_ENDPOINT: await fake(200, health(allAvailable())),
    });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('The HTTP API (API Gateway v2) is not available in this LocalStack');
    expect(r.stderr).toContain('--api rest');
  });

  it('api http where apigatewayv2 is available (a licensed LocalStack): ready', async () => {
    const r = await bash('localstack-probe.sh', ['--api=http'], {
      LOCALSTACK_ENDPOINT: await fake(
        200,
        health({ ...allAvailable(), apigatewayv2: 'available' }, { edition: 'pro' }),
      ),
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('(pro)');
  });

  it('a service missing or disabled: exit 2, naming each', async () => {
    const r = await bash('localstack-probe.sh', [], {
      LOCALSTACK_ENDPOINT: await fake(200, health({ ...allAvailable(), secretsmanager: 'disabled', lambda: 'error' })),
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/lacks services the stack needs: .*lambda.*secretsmanager/);
  });

  it('an answer that demands an account or token: exit 3, explaining LOCALSTACK_AUTH_TOKEN and the pinned tag', async () => {
    for (const [status, body] of [
      [401, '{"error": "invalid auth token"}'],
      [503, 'LocalStack requires an account to run.'],
    ] as const) {
      const r = await bash('localstack-probe.sh', [], { LOCALSTACK_ENDPOINT: await fake(status, body) });
      expect(r.code, body).toBe(3);
      expect(r.stderr).toContain('LOCALSTACK_AUTH_TOKEN');
      expect(r.stderr).toContain('localstack/localstack:4.7.0');
      await new Promise<void>((res) => server!.close(() => res()));
      server = undefined;
    }
  });

  it('a 200 that mentions a license (a licensed LocalStack) is not mistaken for a token demand', async () => {
    const r = await bash('localstack-probe.sh', [], {
      LOCALSTACK_ENDPOINT: await fake(200, health(allAvailable(), { license: 'active' })),
    });
    expect(r.code, r.stderr).toBe(0);
  });

  it('another error answer: exit 2 with the status', async () => {
    const r = await bash('localstack-probe.sh', [], { LOCALSTACK_ENDPOINT: await fake(500, 'boom') });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('answered HTTP 500');
  });

  it('nothing answers: exit 2, pointing at npm run local:up and Docker', async () => {
    const endpoint = await closedPort();
    const r = await bash('localstack-probe.sh', [], { LOCALSTACK_ENDPOINT: endpoint, PATH: fakeDocker('', '') });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`LocalStack does not answer at ${endpoint}`);
    expect(r.stderr).toContain('npm run local:up');
    expect(r.stderr).toContain('Docker');
  });

  it('nothing answers and the container exited 55 (an image that demands an account): exit 3', async () => {
    const endpoint = await closedPort();
    const r = await bash('localstack-probe.sh', [], {
      LOCALSTACK_ENDPOINT: endpoint,
      PATH: fakeDocker('exited 55', 'License activation failed'),
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('LocalStack requires an account to run');
  });

  it('nothing answers and the container logged the account requirement: exit 3', async () => {
    const r = await bash('localstack-probe.sh', [], {
      LOCALSTACK_ENDPOINT: await closedPort(),
      PATH: fakeDocker('exited 1', 'LocalStack requires an account to run.'),
    });
    expect(r.code).toBe(3);
  });

  it('refuses an unknown --api', async () => {
    const r = await bash('localstack-probe.sh', ['--api', 'grpc']);
    expect(r.code).toBe(2);
  });
});

describe('docker-compose.yml', () => {
  const compose = readFileSync(path.join(REPO, 'docker-compose.yml'), 'utf8');

  it('fails loudly on resource types LocalStack does not emulate (no fallbacks)', () => {
    expect(compose).toMatch(/^\s+CFN_IGNORE_UNSUPPORTED_RESOURCE_TYPES: "0"$/m);
  });

  it('pins localstack/localstack:4.7.0 by tag and digest, overridable by LOCALSTACK_IMAGE', () => {
    expect(compose).toMatch(/image: \$\{LOCALSTACK_IMAGE:-localstack\/localstack:4\.7\.0@sha256:[0-9a-f]{64}\}/);
  });

  it('mounts the Docker socket (Lambda runs in containers), passes LOCALSTACK_AUTH_TOKEN, binds 127.0.0.1 only', () => {
    expect(compose).toContain('- "/var/run/docker.sock:/var/run/docker.sock"');
    expect(compose).toContain(['LOCALSTACK_AUTH_TOKEN: $', '{LOCALSTACK_AUTH_TOKEN:-}'].join(''));
    expect(compose).toContain('- "127.0.0.1:4566:4566"');
  });

  it('starts every service the probe requires for api=rest', () => {
    const services = /SERVICES: \$\{LOCALSTACK_SERVICES:-([^}]*)\}/.exec(compose)?.[1]?.split(',') ?? [];
    for (const s of [...probeRequired(), 'apigateway']) expect(services, s).toContain(s);
    expect(services).not.toContain('apigatewayv2');
  });
});

describe('Function: localstackApiUrl', () => {
  it("turns a REST API's stage URL into LocalStack's path form on its one endpoint", () => {
    expect(
      localstackApiUrl('https://abc123xyz.execute-api.us-east-1.amazonaws.com/prod/', 'http://127.0.0.1:4566'),
    ).toBe('http://127.0.0.1:4566/restapis/abc123xyz/prod/_user_request_/');
    expect(localstackApiUrl('https://abc123.execute-api.eu-west-1.amazonaws.com/prod', 'http://127.0.0.1:4566/')).toBe(
      'http://127.0.0.1:4566/restapis/abc123/prod/_user_request_/',
    );
  });

  it("an HTTP API's $default stage (no stage in its URL)", () => {
    expect(localstackApiUrl('https://h77.execute-api.us-east-1.amazonaws.com/', 'http://127.0.0.1:4566')).toBe(
      'http://127.0.0.1:4566/restapis/h77/$default/_user_request_/',
    );
  });

  it('refuses a URL that is not execute-api', () => {
    expect(() => localstackApiUrl('https://example.com/prod/', 'http://127.0.0.1:4566')).toThrow(
      /not an execute-api URL/,
    );
  });
});
