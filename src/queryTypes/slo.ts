import { SLOEditor } from '../components/editors/SLOEditor';
import { defineQueryType } from './definition';

export const sloType = defineQueryType({
  id: 'slo',
  label: 'SLO table',
  description: 'SLO table: attainment, observed quantile, error budget, burn rates and status per objective',
  defaults: {},
  shared: { targets: true, models: true, groupBy: true, window: false },
  fields: { profile: { owned: false }, objectives: { owned: true }, source: { owned: true } },
  editor: SLOEditor,
});
