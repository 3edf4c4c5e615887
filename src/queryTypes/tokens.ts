import { TokensEditor } from '../components/editors/TokensEditor';
import { LATENCY_FORMATS, STANDARD_STATS, TOKENS_SIGNALS } from '../types';
import { defineQueryType } from './definition';

export const tokensType = defineQueryType({
  id: 'tokens',
  label: 'Tokens',
  description: 'Tokens per engine step, prompt and generation lengths per request: mean and quantiles, or heatmap rows',
  defaults: { signals: ['iteration_tokens', 'prompt_length', 'generation_length'], stats: ['mean', 'p50', 'p99'] },
  shared: { targets: true, models: true, groupBy: true, window: true },
  fields: {
    signals: { owned: true, enum: TOKENS_SIGNALS },
    stats: { owned: true, enum: STANDARD_STATS },
    format: { owned: true, enum: LATENCY_FORMATS },
  },
  editor: TokensEditor,
});
