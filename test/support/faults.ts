/**
 * Fault injection for AWS SDK v3 clients, as SDK middleware.
 *
 * A {@link FaultInjector} is attached to real clients (`runtime.clients.sqs` / `.dynamodb`, or
 * any client a test builds); each armed {@link Fault} makes the nth call of one command (among
 * the calls its `match` accepts) fail with an error shaped like the service's own: `name` set
 * and `$metadata.httpStatusCode` set, so Kaj's adapters and the SDK classify it as they would
 * the real thing.
 *
 * Where the error is raised decides whether the SDK's own retry sees it:
 *
 * - `layer: 'app'` (default): the middleware sits at the `initialize` step, outside the SDK's
 *   retry middleware (`finalizeRequest`, priority high). The error reaches Kaj exactly once per
 *   injected call — it stands for "the SDK retried and gave up" (a throttle or outage that
 *   outlasted `maxAttempts`). No `maxAttempts: 1` is needed, and Kaj's own recovery is tested.
 * - `layer: 'wire'`: the middleware sits at the `deserialize` step, inside the retry loop, so the
 *   SDK retries it like a real response. Use it to show that a single transient error is absorbed
 *   by the SDK, or (with `phase: 'after'`) that the SDK *re-sends a request that had already been
 *   applied* — a lost response turned into a duplicate, non-idempotent write.
 *
 * `phase: 'before'` fails the call before it reaches the service (nothing happened);
 * `phase: 'after'` lets the service apply it and then replaces the response with the error
 * (an ambiguous outcome: the caller cannot tell that the write landed).
 *
 * @module
 */
/** What SDK errors carry besides name and message. */
export interface MetadataBearer {
  $metadata: { httpStatusCode?: number; attempts?: number };
}

export type FaultErrorKind =
  /** SQS/generic throttling (HTTP 400, `ThrottlingException`): retryable by the SDK. */
  | 'throttling'
  /** DynamoDB throttling (HTTP 400, `ProvisionedThroughputExceededException`). */
  | 'provisioned-throughput'
  /** HTTP 500 `InternalServerError`. */
  | 'internal'
  /** HTTP 503 `ServiceUnavailable`. */
  | 'unavailable'
  /** The client gave up waiting (`TimeoutError`, no HTTP status), as NodeHttpHandler reports it. */
  | 'timeout';

const ERRORS: Record<FaultErrorKind, { name: string; status?: number; message: string }> = {
  throttling: { name: 'ThrottlingException', status: 400, message: 'Rate exceeded (injected)' },
  'provisioned-throughput': {
    name: 'ProvisionedThroughputExceededException',
    status: 400,
    message: 'The level of configured provisioned throughput for the table was exceeded (injected)',
  },
  internal: { name: 'InternalServerError', status: 500, message: 'Internal server error (injected)' },
  unavailable: { name: 'ServiceUnavailable', status: 503, message: 'Service unavailable (injected)' },
  timeout: { name: 'TimeoutError', message: 'Connection timed out after 3000 ms (injected)' },
};

/** An error as the SDK would surface it for `kind`. */
export function sdkError(kind: FaultErrorKind): Error & MetadataBearer & { $fault: string } {
  const spec = ERRORS[kind];
  const err = new Error(spec.message) as Error & MetadataBearer & { $fault: string };
  err.name = spec.name;
  err.$metadata = spec.status === undefined ? { attempts: 1 } : { httpStatusCode: spec.status, attempts: 1 };
  err.$fault = kind;
  return err;
}

export interface FaultSpec {
  /** SDK command name, with or without the `Command` suffix: `SendMessage`, `UpdateItem`. */
  readonly command: string;
  /** Only calls whose input passes this are counted (see the call-site matchers below). */
  readonly match?: (input: Record<string, unknown>) => boolean;
  /** Fail the nth matching call (1-based). @default 1 */
  readonly nth?: number;
  /** Fail this many consecutive matching calls from the nth on. @default 1 */
  readonly times?: number;
  readonly error: FaultErrorKind;
  /** @default 'before' */
  readonly phase?: 'before' | 'after';
}

/** One armed fault: counts what it saw and what it broke. */
export class Fault {
  /** Matching calls seen so far. */
  matched = 0;
  /** Calls failed so far. */
  fired = 0;
  /** Inputs of the calls that were failed, for assertions. */
  readonly failedInputs: Record<string, unknown>[] = [];
  constructor(readonly spec: FaultSpec) {}

  get description(): string {
    const s = this.spec;
    return `${s.error} on ${s.command} #${s.nth ?? 1}${(s.times ?? 1) > 1 ? `×${s.times}` : ''} (${s.phase ?? 'before'})`;
  }

  /** Whether this call (already known to be of the right command) is to fail. */
  take(input: Record<string, unknown>): boolean {
    if (this.spec.match !== undefined && !this.spec.match(input)) return false;
    this.matched += 1;
    const first = this.spec.nth ?? 1;
    const last = first + (this.spec.times ?? 1) - 1;
    if (this.matched < first || this.matched > last) return false;
    this.fired += 1;
    this.failedInputs.push(input);
    return true;
  }
}

/**
 * Records the calls of one command that `match` accepts, without failing any: what Kaj asked
 * of the service (at the layer it is attached to), for assertions such as "the sweeper sent the
 * message twice" or "the first delivery wrote nothing".
 */
export class CallWatch {
  /** Inputs of the matching calls, in order. */
  readonly inputs: Record<string, unknown>[] = [];
  /** When each was made (epoch ms), in the same order. */
  readonly at: number[] = [];
  constructor(
    readonly command: string,
    readonly match?: (input: Record<string, unknown>) => boolean,
  ) {}

  get count(): number {
    return this.inputs.length;
  }

  /** Notes this call (already known to be of the right command) if it matches. */
  see(input: Record<string, unknown>): void {
    if (this.match !== undefined && !this.match(input)) return;
    this.inputs.push(input);
    this.at.push(Date.now());
  }
}

/** The slice of an SDK client's middleware stack this uses (the SDK's own types are per service). */
interface StackLike {
  add(
    mw: (
      next: (args: { input: unknown }) => Promise<unknown>,
      context: { commandName?: string },
    ) => (args: { input: unknown }) => Promise<unknown>,
    options: {
      step: 'initialize' | 'deserialize';
      name: string;
      priority?: 'high' | 'normal' | 'low';
      override?: boolean;
    },
  ): void;
  remove(name: string): boolean;
}

let attachments = 0;

/** Holds the armed faults and the middleware that applies them to the clients it is attached to. */
export class FaultInjector {
  private faults: Fault[] = [];
  private watches: CallWatch[] = [];
  private readonly detachers: (() => void)[] = [];

  /** Arms a fault; it stays armed (and counting) until {@link clear}. */
  add(spec: FaultSpec): Fault {
    const f = new Fault(spec);
    this.faults.push(f);
    return f;
  }

  /** Starts recording the calls of `command` that `match` accepts (until {@link clear}); fails none. */
  watch(command: string, match?: (input: Record<string, unknown>) => boolean): CallWatch {
    const w = new CallWatch(command.replace(/Command$/, ''), match);
    this.watches.push(w);
    return w;
  }

  /** Disarms every fault and stops every watch. */
  clear(): void {
    this.faults = [];
    this.watches = [];
  }

  /**
   * Adds the injecting middleware to `client` (a DynamoDBDocumentClient shares its base client's
   * stack, so attaching to the DynamoDBClient covers the document client too).
   */
  attach(client: { middlewareStack: object }, { layer = 'app' }: { layer?: 'app' | 'wire' } = {}): this {
    attachments += 1;
    const name = `kajFaultInjection${attachments}`;
    const stack = client.middlewareStack as StackLike;
    stack.add(
      (next, context) => async (args) => {
        const command = (context.commandName ?? '').replace(/Command$/, '');
        const input = (args.input ?? {}) as Record<string, unknown>;
        // Every watch sees every call, whether or not a fault then fails it.
        for (const w of this.watches) if (w.command === command) w.see(input);
        const fault = this.faults.find((f) => f.spec.command.replace(/Command$/, '') === command && f.take(input));
        if (fault === undefined) return next(args);
        if ((fault.spec.phase ?? 'before') === 'after') await next(args);
        throw sdkError(fault.spec.error);
      },
      layer === 'app'
        ? { step: 'initialize', name, priority: 'high', override: true }
        : { step: 'deserialize', name, priority: 'low', override: true },
    );
    this.detachers.push(() => stack.remove(name));
    return this;
  }

  /** Removes the middleware from every client it was attached to. */
  detach(): void {
    for (const d of this.detachers.splice(0)) d();
  }
}

// ---------------------------------------------------------------------------------------------
// Call-site matchers: tell Kaj's calls apart by what they write. They look at attribute *names*
// (ExpressionAttributeNames values), which are the same before and after the document client
// marshalls the input, and so do not depend on placeholders or on the order of clauses.

/**
 * The attribute names a DynamoDB UpdateItem sets (SET clause), those of them it increments
 * (`#n = if_not_exists(#n, :zero) + :one`, the store's `add`), and those it removes.
 */
export function updatedAttributes(input: Record<string, unknown>): {
  set: Set<string>;
  incremented: Set<string>;
  remove: Set<string>;
} {
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const expr = String(input.UpdateExpression ?? '');
  const set = new Set<string>();
  const incremented = new Set<string>();
  const remove = new Set<string>();
  const setPart = /SET (.*?)(?: REMOVE |$)/.exec(expr)?.[1] ?? '';
  for (const m of setPart.matchAll(/(#\w+)\s*=/g)) set.add(names[m[1] ?? ''] ?? '');
  for (const m of setPart.matchAll(/(#\w+)\s*=\s*if_not_exists\(\s*\1\s*,[^)]*\)\s*\+/g)) {
    incremented.add(names[m[1] ?? ''] ?? '');
  }
  const removePart = /REMOVE (.*)$/.exec(expr)?.[1] ?? '';
  for (const m of removePart.matchAll(/#\w+/g)) remove.add(names[m[0]] ?? '');
  return { set, incremented, remove };
}

/**
 * Which of Kaj's writes an UpdateItem is:
 * - `claim`: a claim written when a message is delivered — a redelivery or a suspect
 *   (`attempts + 1`, `lease_token + 1`), or the reclaim of a task whose worker vanished;
 * - `lazyClaim`: the claim a first delivery writes at its first heartbeat (`attempts` set to
 *   the attempt it already is, `lease_token + 1`, `running`);
 * - `heartbeat`: a lease extension of a written claim; `solo`: the mark of an attempt that runs
 *   alone (after a crash), which extends the lease too;
 * - `succeed`, `retry`, `fail`, `cancel`: an attempt's outcome (a lazy claim's outcome sets
 *   `attempts` and `started_at` besides, and is still its outcome's kind);
 * - `outboxRemove`: an outbox entry removed and nothing else (after the sweeper's send, or a stale
 *   entry of a finished task); `outboxMove`: an entry's due time moved on (a running task's entry
 *   while its lease is live).
 */
export type UpdateKind =
  | 'claim'
  | 'lazyClaim'
  | 'heartbeat'
  | 'solo'
  | 'succeed'
  | 'retry'
  | 'fail'
  | 'cancel'
  | 'outboxRemove'
  | 'outboxMove'
  | 'other';

export function updateKind(input: Record<string, unknown>): UpdateKind {
  const { set, incremented, remove } = updatedAttributes(input);
  if (set.has('result')) return 'succeed';
  if (set.has('attempts') && set.has('lease_token')) return incremented.has('attempts') ? 'claim' : 'lazyClaim';
  if (set.has('dispatch_id') && set.has('run_at') && set.has('status')) return 'retry';
  if (set.has('status') && set.has('last_error') && set.has('finished_at')) return 'fail';
  if (set.has('cancel_requested') || (set.has('status') && set.has('finished_at'))) return 'cancel';
  if (set.has('solo')) return 'solo';
  if (set.has('lease_until') && !set.has('status')) return 'heartbeat';
  if (set.size === 1 && set.has('outbox_due')) return 'outboxMove';
  if (set.size === 0 && remove.has('outbox_pk')) return 'outboxRemove';
  return 'other';
}

/** The task an SDK call is about, when its input names one (a DynamoDB key, a message's `kaj-task-id`). */
export function taskIdOf(input: Record<string, unknown>): string | undefined {
  const key = (input.Key as Record<string, unknown> | undefined)?.task_id;
  if (typeof key === 'string') return key;
  if (key !== undefined) return (key as { S?: string }).S;
  const attrs = input.MessageAttributes as Record<string, { StringValue?: string }> | undefined;
  return attrs?.['kaj-task-id']?.StringValue;
}

/** Matches calls about one task (and, optionally, accepted by `match` too). */
export function forTask(taskId: string, match?: (input: Record<string, unknown>) => boolean) {
  return (input: Record<string, unknown>): boolean =>
    taskIdOf(input) === taskId && (match === undefined || match(input));
}

/** Matches UpdateItem calls of one kind, optionally for one task. */
export function isUpdate(kind: UpdateKind, taskId?: () => string | undefined) {
  return (input: Record<string, unknown>): boolean => {
    if (updateKind(input) !== kind) return false;
    if (taskId === undefined) return true;
    return taskIdOf(input) === taskId();
  };
}

/** Matches SendMessage calls to one of these queue URLs (and, optionally, of one task type). */
export function isSendTo(queueUrls: readonly string[], type?: string) {
  return (input: Record<string, unknown>): boolean => {
    if (!queueUrls.includes(String(input.QueueUrl))) return false;
    if (type === undefined) return true;
    const attrs = (input.MessageAttributes ?? {}) as Record<string, { StringValue?: string }>;
    return attrs['kaj-type']?.StringValue === type;
  };
}

/** The task message a SendMessage call carries (its body). */
export function sentMessage(input: Record<string, unknown>): {
  task_id: string;
  dispatch_id: string;
  sent_at?: number;
} {
  return JSON.parse(String(input.MessageBody)) as { task_id: string; dispatch_id: string; sent_at?: number };
}
