import { switchQueryType } from '../queryModel';
import { InferscopeQuery, QueryType } from '../types';
import { DEFAULT_QUERY, QUERY_TYPES, queryTypeDefinition } from './registry';

/**
 * The tables the registry replaced (QueryEditor's USES, queryModel's
 * TYPE_FIELDS and CARRY, types' TYPE_DEFAULTS, as of the commit before it),
 * kept here as the reference the registry must reproduce: the query JSON the
 * editors produce must not change. Types and fields added since (issue 26:
 * latency's source, the probe type) are appended to the tables.
 * editors produce must not change. Types added since (cost, capacity, errors, tokens) have
 * their entry at the end of each table.
 */
const OLD_TYPE_FIELDS: Record<string, Array<keyof InferscopeQuery>> = {
  latency: ['stages', 'stats', 'estimator', 'bounds', 'source'],
  breakdown: ['format'],
  throughput: [],
  saturation: [],
  targets: [],
  raw: ['metric', 'matchers'],
  gpu: ['agents', 'gpus', 'signals'],
  diagnosis: ['format'],
  events: [],
  slo: ['objectives', 'source'],
  burn_rate: ['objectives'],
  goodput: [],
  buckets: ['thresholds'],
  // Types added after the registry (issue 25), with the fields they own.
  benchmark: ['baseline', 'tolerance', 'margin'],
  regression: ['format', 'span', 'before', 'after', 'minEffect'],
  probe: ['view', 'signal', 'threshold', 'sustainedShare'],
  cost: ['series', 'baseline'],
  capacity: ['format', 'profiles', 'utilisation', 'maxNumSeqs', 'maxNumBatchedTokens', 'whatIf'],
  errors: ['format', 'errorClasses', 'allowedShares'],
  tokens: ['signals', 'stats', 'format'],
};
const OLD_CARRY: Array<keyof InferscopeQuery> = ['objectives', 'source'];
const OLD_DEFAULTS: Record<string, Partial<InferscopeQuery>> = {
  latency: { stages: ['ttft', 'e2e'], stats: ['p50', 'p99'], estimator: 'prometheus', bounds: true },
  breakdown: { format: 'timeseries' },
  throughput: {},
  saturation: {},
  targets: {},
  raw: { metric: '', matchers: {} },
  gpu: { signals: ['gpu_util', 'fb_used', 'power', 'saturation'] },
  diagnosis: { format: 'table' },
  events: {},
  slo: {},
  burn_rate: {},
  goodput: {},
  buckets: { stats: ['p50', 'p90', 'p99'] },
  benchmark: {},
  regression: { format: 'table' },
  probe: { view: 'jitter' },
  cost: {},
  capacity: { format: 'table' },
  errors: { format: 'timeseries' },
  tokens: { signals: ['iteration_tokens', 'prompt_length', 'generation_length'], stats: ['mean', 'p50', 'p99'] },
};
const T = true;
const F = false;
const OLD_USES: Record<string, [boolean, boolean, boolean, boolean]> = {
  latency: [T, T, T, T],
  breakdown: [T, T, T, T],
  throughput: [T, T, T, T],
  saturation: [T, T, T, T],
  targets: [T, F, F, F],
  raw: [T, F, F, F],
  gpu: [F, F, F, F],
  diagnosis: [T, T, F, T],
  events: [T, F, F, F],
  slo: [T, T, T, F],
  burn_rate: [T, T, T, F],
  goodput: [T, T, T, T],
  buckets: [T, T, T, F],
  benchmark: [T, T, F, T],
  regression: [T, T, F, F],
  probe: [T, T, F, T],
  cost: [T, F, F, T],
  capacity: [T, F, F, T],
  errors: [T, T, T, T],
  tokens: [T, T, T, T],
};

function oldSwitch(query: InferscopeQuery, t: string): InferscopeQuery {
  const out = { ...query, queryType: t } as InferscopeQuery;
  const keep = new Set(OLD_TYPE_FIELDS[t].filter((f) => OLD_CARRY.includes(f)));
  for (const [type, fields] of Object.entries(OLD_TYPE_FIELDS)) {
    if (type !== t) {
      for (const f of fields) {
        if (!keep.has(f)) {
          delete out[f];
        }
      }
    }
  }
  for (const [k, v] of Object.entries(OLD_DEFAULTS[t])) {
    const key = k as keyof InferscopeQuery;
    if (out[key] === undefined) {
      (out as unknown as Record<string, unknown>)[k] = v;
    }
  }
  return out;
}

/** A query holding every field, as one saved under `type` might after edits and type changes. */
function full(type: string): InferscopeQuery {
  return {
    refId: 'A',
    queryType: type as QueryType,
    targets: ['vllm-a'],
    models: ['m'],
    groupBy: 'model',
    window: '5m',
    stages: ['itl'],
    stats: ['mean', 'p99.9'],
    estimator: 'refined',
    bounds: false,
    format: 'table',
    classes: ['stalled'],
    metric: 'vllm:num_requests_running',
    matchers: { a: 'b' },
    agents: ['node-a'],
    gpus: ['0'],
    signals: ['power'],
    profile: 'chat',
    objectives: ['ttft-p99'],
    thresholds: [0.5],
    baseline: 'run1',
    tolerance: 0.2,
    margin: 0.1,
    span: '1h',
    before: { from: '1', to: '2' },
    after: { from: '2', to: '3' },
    minEffect: 0.1,
    source: 'probe',
    view: 'spikes',
    signal: 'ttft',
    threshold: 0.5,
    sustainedShare: 0.6,
    series: ['cost_per_1m_tokens'],
    profiles: ['chat'],
    utilisation: 0.7,
    maxNumSeqs: 128,
    maxNumBatchedTokens: 4096,
    whatIf: { addReplicas: 1 },
  };
}

describe('query-type registry', () => {
  it('lists the thirteen types in the picker order of before, then the new ones', () => {
    expect(QUERY_TYPES).toEqual(Object.keys(OLD_TYPE_FIELDS));
  });

  it('switches types exactly as the old tables did, for every pair and a query holding every field', () => {
    for (const from of QUERY_TYPES) {
      for (const to of QUERY_TYPES) {
        for (const q of [
          full(from),
          { refId: 'A', queryType: from },
          { refId: 'B', queryType: from, format: 'status' },
        ]) {
          const got = switchQueryType(q as InferscopeQuery, to);
          const want = oldSwitch(q as InferscopeQuery, to);
          expect({ from, to, json: JSON.stringify(got) }).toEqual({ from, to, json: JSON.stringify(want) });
        }
      }
    }
  });

  it('shows the same shared controls per type', () => {
    for (const t of QUERY_TYPES) {
      const s = queryTypeDefinition(t)!.shared;
      expect({ t, uses: [s.targets, s.models, s.groupBy, s.window] }).toEqual({ t, uses: OLD_USES[t] });
    }
  });

  it('starts a new query as before (same keys in the same order)', () => {
    expect(JSON.stringify(DEFAULT_QUERY)).toBe(
      '{"queryType":"latency","stages":["ttft","e2e"],"stats":["p50","p99"],"estimator":"prometheus","bounds":true,"groupBy":"none"}'
    );
  });

  it('gives every type a label in words, a description, and an editor unless it has no fields of its own', () => {
    for (const t of QUERY_TYPES) {
      const d = queryTypeDefinition(t)!;
      expect(d.label).toMatch(/^[A-Z]/);
      expect(d.description.length).toBeGreaterThan(20);
      expect({ t, editor: d.editor !== undefined }).toEqual({
        t,
        editor: Object.keys(d.fields).length > 0 || t === 'events',
      });
    }
    expect(queryTypeDefinition('nope')).toBeUndefined();
  });
});
