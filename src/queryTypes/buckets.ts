import { BucketsEditor } from '../components/editors/BucketsEditor';
import { defineQueryType } from './definition';

export const bucketsType = defineQueryType({
  id: 'buckets',
  label: 'Bucket layout',
  description: 'Where quantiles and thresholds fall in the buckets, and extra bounds for --custom-histogram-buckets',
  defaults: { stats: ['p50', 'p90', 'p99'] },
  shared: { targets: true, models: true, groupBy: true, window: false },
  fields: {
    // The latency type owns stages and stats: switching to buckets resets
    // them (mean is no quantile), switching back to latency keeps them.
    stages: { owned: false },
    stats: { owned: false },
    thresholds: { owned: true },
    profile: { owned: false },
  },
  editor: BucketsEditor,
});
