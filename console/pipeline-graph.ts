/**
 * A pipeline's graph laid out for drawing, pure: each node in the column of its depth (the longest
 * path from a root, so every edge goes left to right), the nodes of a column ordered by where their
 * upstreams stand (fewer crossings) and centred on the tallest column, and each edge a curve from
 * its upstream's right side to its downstream's left side. The run page draws it as SVG.
 *
 * @module
 */

/** A node as the layout needs it: its name and its upstream nodes. */
export interface GraphNodeInput {
  readonly name: string;
  readonly after: readonly string[];
}

/** A node's box: its column (`depth`) and its top-left corner. */
export interface NodeBox {
  readonly name: string;
  readonly depth: number;
  readonly x: number;
  readonly y: number;
}

/** An edge from `from` (upstream) to `to`: the points it goes through and its SVG path. */
export interface EdgeLine {
  readonly from: string;
  readonly to: string;
  /**
   * From the upstream's right side to the downstream's left side; between, for an edge longer
   * than a column, where it enters and leaves each column it crosses.
   */
  readonly points: readonly (readonly [number, number])[];
  /** `M` at the first point, a curve (`C`) between columns, a line (`L`) through a crossed column. */
  readonly path: string;
}

export interface GraphLayout {
  readonly width: number;
  readonly height: number;
  readonly nodeWidth: number;
  readonly nodeHeight: number;
  /** In the order given. */
  readonly nodes: readonly NodeBox[];
  /** Per node in the order given, per upstream in its order. */
  readonly edges: readonly EdgeLine[];
}

export interface LayoutSizes {
  readonly nodeWidth: number;
  readonly nodeHeight: number;
  /** Between two columns. */
  readonly gapX: number;
  /** Between two nodes of a column. */
  readonly gapY: number;
  /** Around the drawing. */
  readonly margin: number;
}

export const DEFAULT_SIZES: LayoutSizes = { nodeWidth: 180, nodeHeight: 44, gapX: 64, gapY: 16, margin: 8 };

/**
 * Each node's depth: 0 for a root, else one more than its deepest upstream. Upstreams that are not
 * nodes are ignored; a cycle (which a checked graph has not) is cut where it closes.
 */
export function depthsOf(nodes: readonly GraphNodeInput[]): Map<string, number> {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const depths = new Map<string, number>();
  const open = new Set<string>();
  const visit = (name: string): number => {
    const known = depths.get(name);
    if (known !== undefined) return known;
    open.add(name);
    let depth = 0;
    for (const up of byName.get(name)?.after ?? []) {
      if (byName.has(up) && !open.has(up)) depth = Math.max(depth, visit(up) + 1);
    }
    open.delete(name);
    depths.set(name, depth);
    return depth;
  };
  for (const n of nodes) visit(n.name);
  return depths;
}

/** A place in a column: a node, or a waypoint of a longer edge passing through the column. */
interface Slot {
  readonly id: string;
  readonly depth: number;
  /** What it follows in the columns before: upstream nodes, or its edge's waypoint before. */
  readonly preds: string[];
}

/** The layout of `nodes` (given upstreams first, as a run lists them). */
export function layoutGraph(nodes: readonly GraphNodeInput[], sizes: LayoutSizes = DEFAULT_SIZES): GraphLayout {
  const { nodeWidth: w, nodeHeight: h, gapX, gapY, margin } = sizes;
  const depths = depthsOf(nodes);
  const depthOf = (name: string) => depths.get(name) ?? 0;
  const xOf = (depth: number) => margin + depth * (w + gapX);
  const slots = new Map<string, Slot>();
  const columns: Slot[][] = [];
  const add = (depth: number, id: string): Slot => {
    const slot: Slot = { id, depth, preds: [] };
    slots.set(id, slot);
    columns[depth] = [...(columns[depth] ?? []), slot];
    return slot;
  };
  for (const n of nodes) add(depthOf(n.name), n.name);
  // An edge longer than one column takes a slot in each column it crosses: it goes round their nodes.
  const chains: { readonly from: string; readonly to: string; readonly via: readonly string[] }[] = [];
  for (const n of nodes) {
    for (const up of n.after) {
      if (!depths.has(up)) continue;
      const via: string[] = [];
      for (let d = depthOf(up) + 1; d < depthOf(n.name); d += 1) {
        const id = `\u0000${up}>${n.name}@${d}`;
        add(d, id).preds.push(via.at(-1) ?? up);
        via.push(id);
      }
      slots.get(n.name)?.preds.push(via.at(-1) ?? up);
      chains.push({ from: up, to: n.name, via });
    }
  }
  const tallest = Math.max(0, ...columns.map((c) => c.length));
  const columnHeight = (rows: number) => (rows === 0 ? 0 : rows * h + (rows - 1) * gapY);
  const tops = new Map<string, number>();
  const centre = (id: string) => (tops.get(id) ?? 0) + h / 2;
  for (const [depth, column] of columns.entries()) {
    // Where a slot's predecessors stand (their mean centre): a column follows the one before it.
    const pull = (s: Slot) =>
      s.preds.length === 0 ? Number.POSITIVE_INFINITY : s.preds.reduce((a, p) => a + centre(p), 0) / s.preds.length;
    const ordered = depth === 0 ? column : [...column].sort((a, b) => pull(a) - pull(b) || 0);
    const top = margin + (columnHeight(tallest) - columnHeight(ordered.length)) / 2;
    ordered.forEach((s, row) => {
      tops.set(s.id, round(top + row * (h + gapY)));
    });
  }
  const edges = chains.map(({ from, to, via }): EdgeLine => {
    const points: [number, number][] = [[xOf(depthOf(from)) + w, centre(from)]];
    for (const id of via) {
      const x = xOf(slots.get(id)?.depth ?? 0);
      points.push([x, centre(id)], [x + w, centre(id)]);
    }
    points.push([xOf(depthOf(to)), centre(to)]);
    return { from, to, points, path: pathOf(points) };
  });
  return {
    width: columns.length === 0 ? 2 * margin : 2 * margin + columns.length * w + (columns.length - 1) * gapX,
    height: 2 * margin + columnHeight(tallest),
    nodeWidth: w,
    nodeHeight: h,
    nodes: nodes.map((n) => ({
      name: n.name,
      depth: depthOf(n.name),
      x: xOf(depthOf(n.name)),
      y: tops.get(n.name) ?? 0,
    })),
    edges,
  };
}

/** Curves between columns, straight lines through the columns a longer edge crosses. */
function pathOf(points: readonly (readonly [number, number])[]): string {
  const [x0, y0] = points[0] as readonly [number, number];
  let path = `M${x0} ${y0}`;
  for (let i = 1; i < points.length; i += 1) {
    const [ax, ay] = points[i - 1] as readonly [number, number];
    const [bx, by] = points[i] as readonly [number, number];
    const mid = round((ax + bx) / 2);
    path += i % 2 === 0 ? ` L${bx} ${by}` : ` C${mid} ${ay} ${mid} ${by} ${bx} ${by}`;
  }
  return path;
}

/** To a tenth: the drawing's numbers stay short. */
function round(v: number): number {
  return Math.round(v * 10) / 10;
}
