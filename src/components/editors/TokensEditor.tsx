import React from 'react';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { LATENCY_FORMATS, STANDARD_STATS, TOKENS_SIGNALS } from '../../types';
import { Multi, Radio, valueOptions, withField } from './common';

const FORMAT_OPTIONS = valueOptions(LATENCY_FORMATS);
const SIGNAL_OPTIONS = valueOptions<string>(TOKENS_SIGNALS);
const STAT_OPTIONS = valueOptions<string>(STANDARD_STATS);

/** Editor of the tokens query type: the histograms, the statistics and the format. */
export function TokensEditor({ query, onChange }: QueryTypeEditorProps<'tokens'>) {
  return (
    <>
      <Radio
        label="Format"
        tooltip="The statistics as series, or requests (steps) per second in each bucket for a heatmap"
        options={FORMAT_OPTIONS}
        value={query.format ?? 'timeseries'}
        onChange={(v) => onChange(withField(query, 'format', v))}
      />
      <Multi
        label="Histograms"
        id="inferscope-tokens-signals"
        tooltip="Tokens per engine step, prompt and generated tokens per request; empty: all three"
        allowCustom={false}
        value={query.signals}
        options={SIGNAL_OPTIONS}
        onChange={(v) => onChange(withField(query, 'signals', v))}
      />
      <Multi
        label="Stats"
        id="inferscope-tokens-stats"
        tooltip="Mean and quantiles (timeseries format only)"
        allowCustom={false}
        value={query.stats}
        options={STAT_OPTIONS}
        onChange={(v) => onChange(withField(query, 'stats', v))}
      />
    </>
  );
}
