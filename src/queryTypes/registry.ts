import { InferscopeQuery, QueryType } from '../types';
import { breakdownType } from './breakdown';
import { benchmarkType } from './benchmark';
import { bucketsType } from './buckets';
import { burnRateType } from './burn_rate';
import { capacityType } from './capacity';
import { errorsType } from './errors';
import { costType } from './cost';
import { AnyQueryTypeDefinition, QueryTypeDefinition } from './definition';
import { diagnosisType } from './diagnosis';
import { eventsType } from './events';
import { goodputType } from './goodput';
import { gpuType } from './gpu';
import { latencyType } from './latency';
import { probeType } from './probe';
import { rawType } from './raw';
import { regressionType } from './regression';
import { saturationType } from './saturation';
import { sloType } from './slo';
import { targetsType } from './targets';
import { throughputType } from './throughput';
import { tokensType } from './tokens';

/**
 * The query types of the front end, in the order of the type picker: one
 * file per type in this folder, one line here. `satisfies` makes the
 * compiler refuse a type whose id (declared in its file) has no line here.
 */
const BY_ID = {
  latency: latencyType,
  breakdown: breakdownType,
  throughput: throughputType,
  saturation: saturationType,
  targets: targetsType,
  raw: rawType,
  gpu: gpuType,
  diagnosis: diagnosisType,
  events: eventsType,
  slo: sloType,
  burn_rate: burnRateType,
  goodput: goodputType,
  buckets: bucketsType,
  benchmark: benchmarkType,
  regression: regressionType,
  probe: probeType,
  cost: costType,
  capacity: capacityType,
  errors: errorsType,
  tokens: tokensType,
} satisfies { [K in QueryType]: QueryTypeDefinition<K> };

/** Every query type, in picker order. */
export const QUERY_TYPE_LIST: readonly AnyQueryTypeDefinition[] = Object.values(BY_ID);

/** Ids of every query type, in picker order. */
export const QUERY_TYPES: readonly QueryType[] = QUERY_TYPE_LIST.map((d) => d.id);

/** The type of a new query. */
export const DEFAULT_QUERY_TYPE: QueryType = 'latency';

/** The definition of a query type; undefined for an id no type has (a query saved by a newer version). */
export function queryTypeDefinition(id: string | undefined): AnyQueryTypeDefinition | undefined {
  return QUERY_TYPE_LIST.find((d) => d.id === id);
}

/** A new query: the default type with its defaults, not grouped. */
export const DEFAULT_QUERY: Partial<InferscopeQuery> = {
  queryType: DEFAULT_QUERY_TYPE,
  ...BY_ID[DEFAULT_QUERY_TYPE].defaults,
  groupBy: 'none',
};
