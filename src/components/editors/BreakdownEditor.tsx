import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, RadioButtonGroup } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { BREAKDOWN_FORMATS, BreakdownFormat } from '../../types';
import { LW, withField } from './common';

const FORMAT_OPTIONS: Array<SelectableValue<BreakdownFormat>> = BREAKDOWN_FORMATS.map((f) => ({ label: f, value: f }));

/** Editor of the breakdown query type: time series per stage, or one table row per group. */
export function BreakdownEditor({ query, onChange }: QueryTypeEditorProps<'breakdown'>) {
  return (
    <InlineField label="Format" labelWidth={LW} tooltip="Time series per stage, or one table row per group">
      <RadioButtonGroup
        aria-label="Format"
        options={FORMAT_OPTIONS}
        value={query.format ?? 'timeseries'}
        onChange={(v) => onChange(withField(query, 'format', v))}
      />
    </InlineField>
  );
}
