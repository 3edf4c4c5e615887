import React from 'react';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { ERROR_CLASSES, ERRORS_FORMATS } from '../../types';
import { Multi, Radio, valueOptions, withField } from './common';

const FORMAT_OPTIONS = valueOptions(ERRORS_FORMATS);
const CLASS_OPTIONS = valueOptions<string>(ERROR_CLASSES);

/** Editor of the errors query type: the format and the error classes to keep. */
export function ErrorsEditor({ query, onChange }: QueryTypeEditorProps<'errors'>) {
  return (
    <>
      <Radio
        label="Format"
        tooltip="The share of each class at each step, or one table row per group"
        options={FORMAT_OPTIONS}
        value={query.format ?? 'timeseries'}
        onChange={(v) => onChange(withField(query, 'format', v))}
      />
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
