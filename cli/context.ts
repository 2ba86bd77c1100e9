import { userInfo } from 'node:os';
import { createInterface } from 'node:readline/promises';
import { systemClock, type Clock } from '../shared/runtime/clock.js';
import { cryptoRandom, type RandomSource } from '../shared/runtime/random.js';
import type { TaskRegistry } from '../shared/task/define.js';
import type { DeadLetterQueues } from './admin/dead-letters.js';
import { realSleep, type Sleep } from './admin/pacer.js';
import { processIo, type CliIo } from './output.js';

/** What an action leaves behind for `runCli`. */
export interface RunState {
  exitCode: number;
}

/** Everything a command needs from the outside world; tests replace any part of it. */
export interface CliContext {
  readonly io: CliIo;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Where `--local` looks for `.kaj/local.json`. */
  readonly cwd: string;
  readonly clock: Clock;
  readonly sleep: Sleep;
  readonly random: RandomSource;
  /** Aborted by Ctrl-C: long operations stop cleanly (held DLQ messages are released). */
  readonly signal: AbortSignal;
  /** Who is acting, for audit entries. */
  readonly actor: string;
  prompt(question: string): Promise<string>;
  /** The task types `kaj submit` knows (tasks/index.ts), loaded on first use. */
  registry(): Promise<TaskRegistry>;
  /** Test seams around the AWS adapters (e.g. a DLQ whose delete fails once). */
  readonly seams?: { readonly dlq?: (d: DeadLetterQueues) => DeadLetterQueues };
}

export function osActor(env: Readonly<Record<string, string | undefined>> = process.env): string {
  try {
    const name = userInfo().username;
    if (name) return name;
  } catch {
    // no passwd entry (some containers)
  }
  return env.USER ?? env.USERNAME ?? 'unknown';
}

export function defaultContext(overrides: Partial<CliContext> = {}): CliContext {
  const io = overrides.io ?? processIo();
  return {
    io,
    env: process.env,
    cwd: process.cwd(),
    clock: systemClock,
    sleep: realSleep,
    random: cryptoRandom,
    signal: new AbortController().signal,
    actor: osActor(),
    prompt: async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return await rl.question(question);
      } finally {
        rl.close();
      }
    },
    registry: async () => (await import('../tasks/index.js')).registry,
    ...overrides,
  };
}
