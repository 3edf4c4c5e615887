import { BreakdownEditor } from '../components/editors/BreakdownEditor';
import { BREAKDOWN_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const breakdownType = defineQueryType({
  id: 'breakdown',
  label: 'Stage breakdown',
  description: 'Mean time per stage: queue + prefill + decode + frontend overhead',
  defaults: { format: 'timeseries' },
  shared: { targets: true, models: true, groupBy: true, window: true },
  fields: { format: { owned: true, enum: BREAKDOWN_FORMATS } },
  editor: BreakdownEditor,
});
