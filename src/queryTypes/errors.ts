import { ErrorsEditor } from '../components/editors/ErrorsEditor';
import { ERRORS_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const errorsType = defineQueryType({
  id: 'errors',
  label: 'Errors by class',
  description: "A gateway's failed requests as API timeout, rate limit, content filter, model error and client error shares",
  defaults: { format: 'timeseries' },
  shared: { targets: true, models: true, groupBy: true, window: true },
  fields: {
    format: { owned: true, enum: ERRORS_FORMATS },
    errorClasses: { owned: true },
    allowedShares: { owned: true },
  },
  editor: ErrorsEditor,
});
