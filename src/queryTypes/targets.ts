import { TargetsEditor } from '../components/editors/TargetsEditor';
import { TARGETS_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const targetsType = defineQueryType({
  id: 'targets',
  label: 'Targets',
  description: 'One row per target: engine, version family, models, up, last scrape, series, last error',
  defaults: {},
  shared: { targets: true, models: false, groupBy: false, window: false },
  fields: { format: { owned: true, enum: TARGETS_FORMATS } },
  editor: TargetsEditor,
});
