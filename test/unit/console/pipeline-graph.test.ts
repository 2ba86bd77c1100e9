/**
 * The run graph's layout (console/pipeline-graph.ts): depth is the longest path from a root, a
 * box per node in its depth's column with none overlapping, an edge per dependency from the
 * upstream's right side to the downstream's left side, and columns ordered after their upstreams.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SIZES,
  depthsOf,
  type GraphLayout,
  type GraphNodeInput,
  layoutGraph,
} from '../../../console/pipeline-graph.js';

/** The shape of nightly_sales: extract → clean, customers → summary → dashboard. */
const NIGHTLY: GraphNodeInput[] = [
  { name: 'extract', after: [] },
  { name: 'clean', after: ['extract'] },
  { name: 'customers', after: [] },
  { name: 'summary', after: ['clean', 'customers'] },
  { name: 'dashboard', after: ['summary'] },
];

const boxOf = (g: GraphLayout, name: string) => {
  const box = g.nodes.find((b) => b.name === name);
  expect(box, name).toBeDefined();
  return box as GraphLayout['nodes'][number];
};

describe('console: pipeline graph layout', () => {
  it('a node’s depth is the longest path from a root, not the shortest', () => {
    expect(Object.fromEntries(depthsOf(NIGHTLY))).toEqual({
      extract: 0,
      clean: 1,
      customers: 0,
      summary: 2,
      dashboard: 3,
    });
    // c follows a directly and through b: its depth is 2.
    const skip = depthsOf([
      { name: 'a', after: [] },
      { name: 'b', after: ['a'] },
      { name: 'c', after: ['a', 'b'] },
    ]);
    expect(skip.get('c')).toBe(2);
    // Listed downstream first: the same depths.
    expect(Object.fromEntries(depthsOf([...NIGHTLY].reverse()))).toEqual(Object.fromEntries(depthsOf(NIGHTLY)));
  });

  it('ignores an upstream that is no node, and ends on a cycle', () => {
    expect(Object.fromEntries(depthsOf([{ name: 'a', after: ['ghost'] }]))).toEqual({ a: 0 });
    const cyclic = depthsOf([
      { name: 'a', after: ['b'] },
      { name: 'b', after: ['a'] },
    ]);
    expect([...cyclic.keys()].sort()).toEqual(['a', 'b']);
  });

  it('one box per node in its depth’s column; no two boxes overlap; the drawing holds them all', () => {
    const g = layoutGraph(NIGHTLY);
    const { nodeWidth: w, nodeHeight: h, gapX, margin } = DEFAULT_SIZES;
    expect(g.nodes.map((b) => b.name)).toEqual(NIGHTLY.map((n) => n.name));
    for (const b of g.nodes) {
      expect(b.x, b.name).toBe(margin + b.depth * (w + gapX));
      expect(b.x + w).toBeLessThanOrEqual(g.width - margin);
      expect(b.y).toBeGreaterThanOrEqual(margin);
      expect(b.y + h).toBeLessThanOrEqual(g.height - margin);
    }
    for (const a of g.nodes) {
      for (const b of g.nodes) {
        if (a === b) continue;
        const apart = a.x + w <= b.x || b.x + w <= a.x || a.y + h <= b.y || b.y + h <= a.y;
        expect(apart, `${a.name} and ${b.name}`).toBe(true);
      }
    }
    expect(g.width).toBe(2 * margin + 4 * w + 3 * gapX);
    expect(g.height).toBe(2 * margin + 2 * h + DEFAULT_SIZES.gapY);
  });

  it('one edge per dependency, from the upstream’s right side to the downstream’s left side, left to right', () => {
    const g = layoutGraph(NIGHTLY);
    const { nodeWidth: w, nodeHeight: h } = DEFAULT_SIZES;
    expect(g.edges.map((e) => `${e.from}>${e.to}`)).toEqual([
      'extract>clean',
      'clean>summary',
      'customers>summary',
      'summary>dashboard',
    ]);
    for (const e of g.edges) {
      const from = boxOf(g, e.from);
      const to = boxOf(g, e.to);
      expect(e.points[0]).toEqual([from.x + w, from.y + h / 2]);
      expect(e.points.at(-1)).toEqual([to.x, to.y + h / 2]);
      const xs = e.points.map(([x]) => x);
      expect(xs).toEqual([...xs].sort((a, b) => a - b));
      expect(e.path.startsWith(`M${from.x + w} ${from.y + h / 2} C`)).toBe(true);
      expect(e.path.endsWith(` ${to.x} ${to.y + h / 2}`)).toBe(true);
    }
    // An upstream that is no node draws no edge.
    expect(layoutGraph([{ name: 'a', after: ['ghost'] }]).edges).toEqual([]);
  });

  it('an edge longer than a column goes round the nodes of the columns it crosses', () => {
    const g = layoutGraph(NIGHTLY);
    const { nodeWidth: w, nodeHeight: h } = DEFAULT_SIZES;
    const long = g.edges.find((e) => e.from === 'customers') as GraphLayout['edges'][number];
    // customers (column 0) → summary (column 2): in through column 1 and out again, at one height.
    expect(long.points).toHaveLength(4);
    const [, enter, leave] = long.points as [number, number][];
    const clean = boxOf(g, 'clean');
    expect(enter).toEqual([clean.x, leave?.[1]]);
    expect(leave?.[0]).toBe(clean.x + w);
    const y = enter?.[1] as number;
    expect(y <= clean.y || y >= clean.y + h, `y ${y} misses clean (${clean.y}…${clean.y + h})`).toBe(true);
    expect(long.path).toMatch(/^M\S+ \S+ C[^CL]+ L\S+ \S+ C[^CL]+$/);
    // Its place in the column keeps the column's boxes apart and inside the drawing.
    expect(y + h / 2).toBeLessThanOrEqual(g.height);
  });

  it('orders a column after where its nodes’ upstreams stand, and centres a shorter column', () => {
    const g = layoutGraph([
      { name: 'top', after: [] },
      { name: 'bottom', after: [] },
      { name: 'from_bottom', after: ['bottom'] },
      { name: 'from_top', after: ['top'] },
    ]);
    expect(boxOf(g, 'top').y).toBeLessThan(boxOf(g, 'bottom').y);
    expect(boxOf(g, 'from_top').y).toBeLessThan(boxOf(g, 'from_bottom').y);
    // A single node beside a column of two: halfway between them.
    const fan = layoutGraph([
      { name: 'a', after: [] },
      { name: 'b', after: [] },
      { name: 'c', after: ['a', 'b'] },
    ]);
    expect(boxOf(fan, 'c').y).toBe((boxOf(fan, 'a').y + boxOf(fan, 'b').y) / 2);
  });

  it('an empty graph is an empty drawing', () => {
    const g = layoutGraph([]);
    expect(g).toMatchObject({
      nodes: [],
      edges: [],
      width: 2 * DEFAULT_SIZES.margin,
      height: 2 * DEFAULT_SIZES.margin,
    });
  });
});
