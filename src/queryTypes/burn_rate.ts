import { SLOEditor } from '../components/editors/SLOEditor';
import { BURN_RATE_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const burnRateType = defineQueryType({
  id: 'burn_rate',
  label: 'Burn rate',
  description: 'Burn rate per objective over 5m … 3d, and status (0 ok, 1 ticket, 2 page) for alert rules',
  defaults: {},
  shared: { targets: true, models: true, groupBy: true, window: false },
  fields: { profile: { owned: false }, objectives: { owned: true }, format: { owned: true, enum: BURN_RATE_FORMATS } },
  editor: SLOEditor,
});
