/**
 * No import cycle in src/: walks every .ts/.tsx file, reads its imports with
 * TypeScript's own pre-parser (import and `import type`, export … from,
 * import(), require(), module augmentations) and fails on any strongly
 * connected group of files, naming one cycle through it.
 */
import fs from 'fs';
import path from 'path';
import ts from 'typescript';

const SRC = __dirname;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      out.push(...sourceFiles(p));
    } else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) {
      out.push(p);
    }
  }
  return out;
}

/** The file an import names, or undefined for a package (relative, or under src/ as tsconfig's baseUrl allows). */
function resolve(from: string, spec: string): string | undefined {
  const base = spec.startsWith('.') ? path.resolve(path.dirname(from), spec) : path.join(SRC, spec);
  for (const c of [base, `${base}.ts`, `${base}.tsx`, path.join(base, 'index.ts'), path.join(base, 'index.tsx')]) {
    if (fs.existsSync(c) && fs.statSync(c).isFile()) {
      return c;
    }
  }
  return undefined;
}

/** Import graph of the files: file → files it imports. */
function importGraph(files: string[]): Map<string, string[]> {
  const g = new Map<string, string[]>();
  for (const f of files) {
    const info = ts.preProcessFile(fs.readFileSync(f, 'utf8'), true, true);
    const deps = info.importedFiles.map((i) => resolve(f, i.fileName)).filter((d): d is string => d !== undefined);
    g.set(f, [...new Set(deps)]);
  }
  return g;
}

/**
 * The cycles of a graph: one per strongly connected component of more than
 * one node (or a node importing itself), as the path a → … → a (Tarjan's
 * algorithm, then a breadth-first path inside the component).
 */
function findCycles(g: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const sccs: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v)!, idx.get(w)!));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (g.get(v) ?? []).includes(v)) {
        sccs.push(scc);
      }
    }
  };
  for (const v of g.keys()) {
    if (!idx.has(v)) {
      visit(v);
    }
  }
  return sccs.map((scc) => {
    const inside = new Set(scc);
    const start = [...scc].sort()[0];
    // Shortest way back to start from start, staying in the component.
    const prev = new Map<string, string>();
    const queue = [start];
    const seen = new Set<string>();
    while (queue.length > 0) {
      const v = queue.shift()!;
      for (const w of g.get(v) ?? []) {
        if (w === start) {
          const cycle = [start];
          for (let x = v; x !== start; x = prev.get(x)!) {
            cycle.splice(1, 0, x);
          }
          return [...cycle, start];
        }
        if (inside.has(w) && !seen.has(w)) {
          seen.add(w);
          prev.set(w, v);
          queue.push(w);
        }
      }
    }
    return scc;
  });
}

describe('imports in src/', () => {
  it('finds cycles, type-only imports included', () => {
    const g = new Map<string, string[]>([
      ['a', ['b']],
      ['b', ['c', 'd']],
      ['c', ['a']],
      ['d', []],
      ['e', ['e']],
    ]);
    expect(findCycles(g)).toEqual([
      ['a', 'b', 'c', 'a'],
      ['e', 'e'],
    ]);
    expect(
      findCycles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ])
      )
    ).toEqual([]);
    const graph = (text: string) => ts.preProcessFile(text, true, true).importedFiles.map((i) => i.fileName);
    expect(graph("import type { DataSource } from '../datasource';")).toEqual(['../datasource']);
    expect(graph("export { x } from './x';\nconst y = import('./y');")).toEqual(['./x', './y']);
  });

  it('has no import cycle', () => {
    const files = sourceFiles(SRC);
    expect(files.length).toBeGreaterThan(30);
    const g = importGraph(files);
    // The walk sees real edges (QueryEditor imports the registry).
    expect(g.get(path.join(SRC, 'components', 'QueryEditor.tsx'))).toContain(
      path.join(SRC, 'queryTypes', 'registry.ts')
    );
    const cycles = findCycles(g).map((c) => c.map((f) => path.relative(SRC, f)).join(' → '));
    expect(cycles).toEqual([]);
  });
});
