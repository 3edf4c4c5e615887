import { GoodputEditor } from '../components/editors/GoodputEditor';
import { defineQueryType } from './definition';

export const goodputType = defineQueryType({
  id: 'goodput',
  label: 'Goodput',
  description: 'Requests/s meeting every objective of a profile: lower and upper bounds',
  defaults: {},
  shared: { targets: true, models: true, groupBy: true, window: true },
  fields: { profile: { owned: false } },
  editor: GoodputEditor,
});
