import { defineQueryType } from './definition';

export const saturationType = defineQueryType({
  id: 'saturation',
  label: 'Saturation',
  description: 'Running and waiting requests, KV-cache usage, preemptions/s, prefix-cache hit ratio',
  defaults: {},
  shared: { targets: true, models: true, groupBy: true, window: true },
  fields: {},
});
