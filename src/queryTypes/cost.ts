import { CostEditor } from '../components/editors/CostEditor';
import { defineQueryType } from './definition';

declare module '../types' {
  interface QueryTypeIds {
    cost: true;
  }
}

/** The cost query's series (pkg/analysis/cost Stats), in output order. */
export const COST_STATS = [
  'cost_per_hour',
  'energy_cost_per_hour',
  'cost_per_1m_output_tokens',
  'cost_per_1m_tokens',
  'cost_per_request',
  'idle_share',
  'idle_cost_per_hour',
  'energy_per_output_token',
  'prefill_cost_per_hour',
  'decode_cost_per_hour',
  'prefix_cache_savings_per_hour',
  'cost_per_1m_good_tokens',
  'cost_spike_ratio',
] as const;

export const costType = defineQueryType({
  id: 'cost',
  label: 'Cost & energy',
  description:
    'Per target: cost per hour, per 1M tokens and per request, idle share, energy per output token, cache savings, cost of goodput',
  defaults: {},
  shared: { targets: true, models: false, groupBy: false, window: true },
  fields: {
    // The latency type's stats are quantiles: switching resets them.
    stats: { owned: true, enum: COST_STATS },
    profile: { owned: false },
    baseline: { owned: true },
  },
  editor: CostEditor,
});
