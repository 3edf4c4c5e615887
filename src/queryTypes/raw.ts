import { RawEditor } from '../components/editors/RawEditor';
import { defineQueryType } from './definition';

export const rawType = defineQueryType({
  id: 'raw',
  label: 'Raw metric',
  description: 'One scraped metric by name, with label matchers, from configured targets only',
  defaults: { metric: '', matchers: {} },
  shared: { targets: true, models: false, groupBy: false, window: false },
  fields: { metric: { owned: true }, matchers: { owned: true } },
  editor: RawEditor,
});
