/**
 * Runs `work` over `items`, at most `limit` at a time (each runner takes the next item as soon
 * as its last one ends). After the first failure no runner starts another item; the call
 * settles only once the work already started has ended, then rejects with that first failure.
 * A caller that rejected while its work still ran would let the next call run beside it (a
 * sweep that failed one query while the others still sent what they found). Callers that must
 * go on past a failure catch inside `work`.
 */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { readonly error: unknown } | undefined;
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next] as T;
      next += 1;
      try {
        await work(item);
      } catch (error) {
        failure ??= { error };
      }
    }
  });
  await Promise.all(runners);
  if (failure !== undefined) throw failure.error;
}
