/**
 * The embedded emulators (dynalite and local-aws-sqs, `local/emulators.ts`) in a child process of
 * their own, so that a benchmark's `process.cpuUsage()` counts the client side (Kaj and the AWS
 * SDK) and not the emulators' work:
 *
 *   const emulators = await startEmulatorProcess();   // { endpoints: { sqs, dynamodb }, stop() }
 *
 * The child is this file run with `--serve` under the parent's loader (tsx); it prints its
 * endpoints as one JSON line and stops when its stdin closes.
 *
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startEmulators } from '../../local/emulators.js';
import type { Endpoints } from '../../shared/aws/wiring.js';

export interface EmulatorProcess {
  readonly endpoints: Endpoints;
  readonly pid: number;
  stop(): Promise<void>;
}

export async function startEmulatorProcess(): Promise<EmulatorProcess> {
  const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), '--serve'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`emulator process exited (${code})`)));
    createInterface({ input: child.stdout as NonNullable<ChildProcess['stdout']> }).once('line', resolve);
  });
  const endpoints = JSON.parse(line) as Endpoints;
  let stopping: Promise<void> | undefined;
  return {
    endpoints,
    pid: child.pid ?? -1,
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin?.end();
      });
      return stopping;
    },
  };
}

async function serve(): Promise<void> {
  const emulators = await startEmulators();
  process.stdout.write(`${JSON.stringify({ sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamoEndpoint })}\n`);
  process.stdin.resume();
  process.stdin.once('end', () => {
    void emulators.stop().then(() => process.exit(0));
  });
}

if (process.argv.includes('--serve') && process.argv[1] === fileURLToPath(import.meta.url)) await serve();
