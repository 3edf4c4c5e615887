import React from 'react';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { BREAKDOWN_FORMATS } from '../../types';
import { Radio, valueOptions, withField } from './common';

const FORMAT_OPTIONS = valueOptions(BREAKDOWN_FORMATS);

/** Editor of the breakdown query type: time series per stage, or one table row per group. */
export function BreakdownEditor({ query, onChange }: QueryTypeEditorProps<'breakdown'>) {
  return (
    <Radio
      label="Format"
      tooltip="Time series per stage, or one table row per group"
      options={FORMAT_OPTIONS}
      value={query.format ?? 'timeseries'}
      onChange={(v) => onChange(withField(query, 'format', v))}
    />
  );
}
