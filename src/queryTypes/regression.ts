import { RegressionEditor } from '../components/editors/RegressionEditor';
import { REGRESSION_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const regressionType = defineQueryType({
  id: 'regression',
  label: 'Regression',
  description: 'Per stage: regressed, improved or no change after each restart, version, model or config change',
  defaults: { format: 'table' },
  shared: { targets: true, models: true, groupBy: false, window: false },
  fields: {
    format: { owned: true, enum: REGRESSION_FORMATS },
    span: { owned: true },
    before: { owned: true },
    after: { owned: true },
    minEffect: { owned: true },
  },
  editor: RegressionEditor,
});
