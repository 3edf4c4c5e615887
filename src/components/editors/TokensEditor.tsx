import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, RadioButtonGroup } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { LATENCY_FORMATS, LatencyFormat, STANDARD_STATS, TOKENS_SIGNALS } from '../../types';
import { LW, Multi, withField } from './common';

const FORMAT_OPTIONS: Array<SelectableValue<LatencyFormat>> = LATENCY_FORMATS.map((f) => ({ label: f, value: f }));
const SIGNAL_OPTIONS: Array<SelectableValue<string>> = TOKENS_SIGNALS.map((s) => ({ label: s, value: s }));
const STAT_OPTIONS: Array<SelectableValue<string>> = STANDARD_STATS.map((s) => ({ label: s, value: s }));

/** Editor of the tokens query type: the histograms, the statistics and the format. */
export function TokensEditor({ query, onChange }: QueryTypeEditorProps<'tokens'>) {
  return (
    <>
      <InlineField
        label="Format"
        labelWidth={LW}
        tooltip="The statistics as series, or requests (steps) per second in each bucket for a heatmap"
      >
        <RadioButtonGroup
          aria-label="Format"
          options={FORMAT_OPTIONS}
          value={(query.format as LatencyFormat | undefined) ?? 'timeseries'}
          onChange={(v) => onChange(withField(query, 'format', v))}
        />
      </InlineField>
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
