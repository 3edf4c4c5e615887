import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, RadioButtonGroup, Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { DIAGNOSIS_FORMAT_DESCRIPTIONS, DIAGNOSIS_FORMATS, DiagnosisFormat } from '../../types';

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
      <InlineField label="Format" labelWidth={14} tooltip={DIAGNOSIS_FORMAT_DESCRIPTIONS[format]}>
        <RadioButtonGroup
          aria-label="Diagnosis format"
          options={FORMAT_OPTIONS}
          value={format}
          onChange={(v) => onChange({ ...query, format: v })}
        />
      </InlineField>
      <Text color="secondary" variant="bodySmall">
        {DIAGNOSIS_FORMAT_DESCRIPTIONS[format]}. Thresholds are data-source settings (jsonData.diagnosis).
      </Text>
    </Stack>
  );
}
