/**
 * Runs `work` over `items`, at most `limit` at a time (each runner takes the next item as soon
 * as its last one ends). Rejects with the first failure of `work`; callers that must go on
 * catch inside `work`.
 */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next] as T;
      next += 1;
      await work(item);
    }
  });
  await Promise.all(runners);
}
