import { defineQueryType } from './definition';

export const throughputType = defineQueryType({
  id: 'throughput',
  label: 'Throughput',
  description: 'Finished requests/s by finish reason, prompt and generation tokens/s',
  defaults: {},
  shared: { targets: true, models: true, groupBy: true, window: true },
  fields: {},
});
