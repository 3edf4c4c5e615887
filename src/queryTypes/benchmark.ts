import { BenchmarkEditor } from '../components/editors/BenchmarkEditor';
import { defineQueryType } from './definition';

export const benchmarkType = defineQueryType({
  id: 'benchmark',
  label: 'Benchmark',
  description: 'Production p50/p90/p99 and throughput at the baseline load, next to a benchmark result, with verdicts',
  defaults: {},
  shared: { targets: true, models: true, groupBy: false, window: true },
  fields: { baseline: { owned: true }, tolerance: { owned: true }, margin: { owned: true } },
  editor: BenchmarkEditor,
});
