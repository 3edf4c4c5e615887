import { InferscopeQuery, QueryType, TYPE_DEFAULTS } from './types';

/** Fields that belong to one query type only; others are shared by all types. */
const TYPE_FIELDS: Record<QueryType, Array<keyof InferscopeQuery>> = {
  latency: ['stages', 'stats', 'estimator', 'bounds'],
  breakdown: ['format'],
  throughput: [],
  saturation: [],
  targets: [],
  raw: ['metric', 'matchers'],
  gpu: ['agents', 'gpus', 'signals'],
  diagnosis: ['format'],
  events: [],
  slo: ['objectives'],
  burn_rate: ['objectives'],
  goodput: [],
  buckets: ['thresholds'],
};

/** Type-owned fields that carry over between the types owning them. */
const CARRY: Array<keyof InferscopeQuery> = ['objectives'];

/** Which shared controls a query type uses. */
export const USES: Record<QueryType, { targets: boolean; models: boolean; groupBy: boolean; window: boolean }> = {
  latency: { targets: true, models: true, groupBy: true, window: true },
  breakdown: { targets: true, models: true, groupBy: true, window: true },
  throughput: { targets: true, models: true, groupBy: true, window: true },
  saturation: { targets: true, models: true, groupBy: true, window: true },
  targets: { targets: true, models: false, groupBy: false, window: false },
  raw: { targets: true, models: false, groupBy: false, window: false },
  gpu: { targets: false, models: false, groupBy: false, window: false },
  diagnosis: { targets: true, models: true, groupBy: false, window: true },
  events: { targets: true, models: false, groupBy: false, window: false },
  slo: { targets: true, models: true, groupBy: true, window: false },
  burn_rate: { targets: true, models: true, groupBy: true, window: false },
  goodput: { targets: true, models: true, groupBy: true, window: true },
  buckets: { targets: true, models: true, groupBy: true, window: false },
};

/**
 * Returns the query switched to type `t`: fields owned by other types are
 * dropped, the new type's defaults fill what is missing, shared fields
 * (targets, models, groupBy, window, refId, datasource, hide) are kept.
 */
export function switchQueryType(query: InferscopeQuery, t: QueryType): InferscopeQuery {
  const out: InferscopeQuery = { ...query, queryType: t };
  // A field that means the same for every type owning it (the objectives of
  // slo and burn_rate) stays when the new type owns it too; others (format
  // of breakdown and diagnosis take different values) are reset.
  const keep = new Set(TYPE_FIELDS[t].filter((f) => CARRY.includes(f)));
  for (const [type, fields] of Object.entries(TYPE_FIELDS) as Array<[QueryType, Array<keyof InferscopeQuery>]>) {
    if (type !== t) {
      for (const f of fields) {
        if (!keep.has(f)) {
          delete out[f];
        }
      }
    }
  }
  const defaults = TYPE_DEFAULTS[t];
  for (const [k, v] of Object.entries(defaults) as Array<[keyof InferscopeQuery, unknown]>) {
    if (out[k] === undefined) {
      (out as unknown as Record<string, unknown>)[k] = v;
    }
  }
  return out;
}

/**
 * A latency statistic: "mean" or a quantile written pNN or pNN.N… with
 * 0 < NN < 100 (p50, p99, p99.9, p99.99).
 */
export function isValidStat(s: string): boolean {
  if (s === 'mean') {
    return true;
  }
  const m = /^p(\d{1,2}(?:\.\d{1,4})?)$/.exec(s);
  if (!m) {
    return false;
  }
  const q = Number(m[1]);
  return q > 0 && q < 100;
}

/** Order statistics as users read them: mean first, then quantiles ascending. */
export function sortStats(stats: string[]): string[] {
  const rank = (s: string) => {
    if (s === 'mean') {
      return -1;
    }
    const r = Number(s.slice(1));
    // Template variables and anything else keep their place after the quantiles.
    return s.startsWith('p') && Number.isFinite(r) ? r : 1000;
  };
  return [...stats].sort((a, b) => rank(a) - rank(b));
}
