import { QUERY_FIELDS } from './queryTypes/fields';
import { QUERY_TYPE_LIST, queryTypeDefinition } from './queryTypes/registry';
import { QueryField } from './queryTypes/definition';
import { InferscopeQuery, QueryType } from './types';

export { isValidStat, sortStats } from './statModel';

/** Fields the type owns (registry `fields` with owned: true). */
function owned(t: QueryType): QueryField[] {
  const fields = queryTypeDefinition(t)?.fields ?? {};
  return (Object.keys(fields) as QueryField[]).filter((f) => fields[f]?.owned);
}

/**
 * Returns the query switched to type `t`: fields owned by other types are
 * dropped, the new type's defaults fill what is missing, shared fields
 * (targets, models, groupBy, window, refId, datasource, hide, and fields no
 * type owns such as profile) are kept. Ownership and defaults come from the
 * query-type registry (src/queryTypes/).
 */
export function switchQueryType(query: InferscopeQuery, t: QueryType): InferscopeQuery {
  const out: InferscopeQuery = { ...query, queryType: t };
  // A field that means the same for every type owning it (the objectives of
  // slo and burn_rate) stays when the new type owns it too; others (format
  // of breakdown and diagnosis take different values) are reset.
  const keep = new Set(owned(t).filter((f) => QUERY_FIELDS[f].carry));
  for (const def of QUERY_TYPE_LIST) {
    if (def.id !== t) {
      for (const f of owned(def.id)) {
        if (!keep.has(f)) {
          delete out[f];
        }
      }
    }
  }
  const defaults = queryTypeDefinition(t)?.defaults ?? {};
  for (const [k, v] of Object.entries(defaults) as Array<[keyof InferscopeQuery, unknown]>) {
    if (out[k] === undefined) {
      (out as unknown as Record<string, unknown>)[k] = v;
    }
  }
  return out;
}
