import { CostEditor } from '../components/editors/CostEditor';
import { COST_STATS } from '../types';
import { defineQueryType } from './definition';

export const costType = defineQueryType({
  id: 'cost',
  label: 'Cost & energy',
  description:
    'Per target: cost per hour, per 1M tokens and per request, idle share, energy per output token, cache savings, cost of goodput',
  defaults: {},
  shared: { targets: true, models: false, groupBy: false, window: true },
  fields: {
    series: { owned: true, enum: COST_STATS },
    profile: { owned: false },
    baseline: { owned: true },
  },
  editor: CostEditor,
});
