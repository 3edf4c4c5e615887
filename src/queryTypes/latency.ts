import { LatencyEditor } from '../components/editors/LatencyEditor';
import { LATENCY_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const latencyType = defineQueryType({
  id: 'latency',
  label: 'Latency',
  description: 'Quantiles and means of request stages (TTFT, ITL, TPOT, E2E, queue, prefill, decode, inference)',
  defaults: { stages: ['ttft', 'e2e'], stats: ['p50', 'p99'], estimator: 'prometheus', bounds: true },
  shared: { targets: true, models: true, groupBy: true, window: true },
  fields: {
    stages: { owned: true },
    stats: { owned: true },
    estimator: { owned: true },
    bounds: { owned: true },
    source: { owned: true },
    format: { owned: true, enum: LATENCY_FORMATS },
    // Draws the profile's thresholds; kept when the type changes, like the targets.
    profile: { owned: false },
  },
  editor: LatencyEditor,
});
