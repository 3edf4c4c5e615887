import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, RadioButtonGroup } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { ERROR_CLASSES, ERRORS_FORMATS, ErrorsFormat } from '../../types';
import { LW, Multi, withField } from './common';

const FORMAT_OPTIONS: Array<SelectableValue<ErrorsFormat>> = ERRORS_FORMATS.map((f) => ({ label: f, value: f }));
const CLASS_OPTIONS: Array<SelectableValue<string>> = ERROR_CLASSES.map((c) => ({ label: c, value: c }));

/** Editor of the errors query type: the format and the error classes to keep. */
export function ErrorsEditor({ query, onChange }: QueryTypeEditorProps<'errors'>) {
  return (
    <>
      <InlineField
        label="Format"
        labelWidth={LW}
        tooltip="The share of each class at each step, or one table row per group"
      >
        <RadioButtonGroup
          aria-label="Format"
          options={FORMAT_OPTIONS}
          value={(query.format as ErrorsFormat | undefined) ?? 'timeseries'}
          onChange={(v) => onChange(withField(query, 'format', v))}
        />
      </InlineField>
      <Multi
        label="Classes"
        id="inferscope-error-classes"
        tooltip="Keep only these error classes (docs/gateways.md); empty: all five"
        allowCustom={false}
        value={query.errorClasses}
        options={CLASS_OPTIONS}
        onChange={(v) => onChange(withField(query, 'errorClasses', v))}
      />
    </>
  );
}
