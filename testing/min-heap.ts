/**
 * A binary min-heap under a strict order (`earlier`): the virtual clock's timer queue
 * (testing/virtual-clock.ts) and the payroll simulation's message queues (bench/payroll/simulate.ts).
 *
 * @module
 */
export class MinHeap<T> {
  private readonly a: T[] = [];

  constructor(private readonly earlier: (x: T, y: T) => boolean) {}

  get size(): number {
    return this.a.length;
  }

  peek(): T | undefined {
    return this.a[0];
  }

  push(t: T): void {
    const a = this.a;
    let i = a.length;
    a.push(t);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = a[parent] as T;
      if (!this.earlier(t, p)) break;
      a[i] = p;
      i = parent;
    }
    a[i] = t;
  }

  pop(): T | undefined {
    const a = this.a;
    const top = a[0];
    const last = a.pop();
    if (top === undefined || last === undefined || a.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= a.length) break;
      const r = l + 1;
      const c = r < a.length && this.earlier(a[r] as T, a[l] as T) ? r : l;
      if (!this.earlier(a[c] as T, last)) break;
      a[i] = a[c] as T;
      i = c;
    }
    a[i] = last;
    return top;
  }
}
