/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  { timeoutMs = 20_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A resource prefix unique to this test process and call, within resourceNames' limits. */
export function uniquePrefix(tag: string): string {
  return `${tag}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`.slice(0, 40);
}
