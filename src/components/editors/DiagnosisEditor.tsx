import React from 'react';
import { SelectableValue } from '@grafana/data';
import { Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { DIAGNOSIS_FORMAT_DESCRIPTIONS, DIAGNOSIS_FORMATS, DiagnosisFormat } from '../../types';
import { Radio } from './common';

const FORMAT_OPTIONS: Array<SelectableValue<DiagnosisFormat>> = DIAGNOSIS_FORMATS.map((f) => ({
  label: f,
  value: f,
  description: DIAGNOSIS_FORMAT_DESCRIPTIONS[f],
}));

type Props = Pick<QueryTypeEditorProps<'diagnosis'>, 'query' | 'onChange'>;

/** Editor of the diagnosis query type: what to return (findings, annotations, timeline, alert numbers). */
export function DiagnosisEditor({ query, onChange }: Props) {
  const format = (
    (DIAGNOSIS_FORMATS as readonly string[]).includes(query.format ?? '') ? query.format : 'table'
  ) as DiagnosisFormat;
  return (
    <Stack direction="column" gap={0.5}>
      <Radio
        label="Format"
        ariaLabel="Diagnosis format"
        tooltip={DIAGNOSIS_FORMAT_DESCRIPTIONS[format]}
        options={FORMAT_OPTIONS}
        value={format}
        onChange={(v) => onChange({ ...query, format: v })}
      />
      <Text color="secondary" variant="bodySmall">
        {DIAGNOSIS_FORMAT_DESCRIPTIONS[format]}. Thresholds are data-source settings (jsonData.diagnosis).
      </Text>
    </Stack>
  );
}
