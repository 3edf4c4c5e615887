import { ERROR_CLASSES, ESTIMATORS, GPU_SIGNALS, GROUP_BY, LATENCY_STAGES, PROBE_SIGNALS, PROBE_VIEWS, SOURCES } from '../types';
import { FieldSpec, QueryField } from './definition';

/**
 * Every field of the query JSON with its JSON type, how template variables
 * are replaced in it, and the values the front end offers. Types pick their
 * fields from here (see the files of src/queryTypes/); the schema test
 * checks them against src/generated/queryschema.json.
 */
export const QUERY_FIELDS: Record<QueryField, FieldSpec> = {
  queryType: { type: 'string', templating: 'none' },
  targets: { type: 'string[]', templating: 'list' },
  models: { type: 'string[]', templating: 'list' },
  groupBy: { type: 'string', templating: 'scalar', enum: GROUP_BY },
  window: { type: 'string', templating: 'scalar' },
  format: { type: 'string', templating: 'scalar' },
  stages: { type: 'string[]', templating: 'list', enum: LATENCY_STAGES },
  stats: { type: 'string[]', templating: 'list' },
  estimator: { type: 'string', templating: 'scalar', enum: ESTIMATORS },
  bounds: { type: 'boolean', templating: 'none' },
  classes: { type: 'string[]', templating: 'none' },
  metric: { type: 'string', templating: 'scalar' },
  matchers: { type: 'object', templating: 'map' },
  agents: { type: 'string[]', templating: 'list' },
  gpus: { type: 'string[]', templating: 'list' },
  signals: { type: 'string[]', templating: 'list', enum: GPU_SIGNALS },
  profile: { type: 'string', templating: 'scalar' },
  baseline: { type: 'string', templating: 'scalar' },
  series: { type: 'string[]', templating: 'list' },
  objectives: { type: 'string[]', templating: 'list', carry: true },
  thresholds: { type: 'number[]', templating: 'none' },
  tolerance: { type: 'number', templating: 'none' },
  margin: { type: 'number', templating: 'none' },
  span: { type: 'string', templating: 'scalar' },
  before: { type: 'object', templating: 'none' },
  after: { type: 'object', templating: 'none' },
  minEffect: { type: 'number', templating: 'none' },
  source: { type: 'string', templating: 'scalar', enum: SOURCES, carry: true },
  view: { type: 'string', templating: 'scalar', enum: PROBE_VIEWS },
  signal: { type: 'string', templating: 'scalar', enum: PROBE_SIGNALS },
  threshold: { type: 'number', templating: 'none' },
  sustainedShare: { type: 'number', templating: 'none' },
  profiles: { type: 'string[]', templating: 'list' },
  utilisation: { type: 'number', templating: 'none' },
  maxNumSeqs: { type: 'number', templating: 'none' },
  maxNumBatchedTokens: { type: 'number', templating: 'none' },
  whatIf: { type: 'object', templating: 'none' },
  errorClasses: { type: 'string[]', templating: 'list', enum: ERROR_CLASSES },
  allowedShares: { type: 'object', templating: 'none' },
};

/** Fields every query type has (the shared controls); the type's own are in its `fields`. */
export const COMMON_FIELDS: readonly QueryField[] = ['queryType', 'targets', 'models', 'groupBy', 'window'];
