import { CapacityEditor } from '../components/editors/CapacityEditor';
import { CAPACITY_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const capacityType = defineQueryType({
  id: 'capacity',
  label: 'Capacity & what-if',
  description:
    'Per target and SLO profile, from a twin calibrated on its history: load, knee, headroom, days to the knee, replicas, what-if predictions',
  defaults: { format: 'table' },
  shared: { targets: true, models: false, groupBy: false, window: true },
  fields: {
    format: { owned: true, enum: CAPACITY_FORMATS },
    profiles: { owned: true },
    utilisation: { owned: true },
    maxNumSeqs: { owned: true },
    maxNumBatchedTokens: { owned: true },
    whatIf: { owned: true },
  },
  editor: CapacityEditor,
});
