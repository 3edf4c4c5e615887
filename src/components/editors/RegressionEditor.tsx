import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, Input, Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { REGRESSION_FORMATS, RegressionFormat } from '../../types';
import { Radio, withField } from './common';

const FORMAT_OPTIONS: Array<SelectableValue<RegressionFormat>> = REGRESSION_FORMATS.map((f) => ({
  label: f,
  value: f,
}));

type Props = Pick<QueryTypeEditorProps<'regression'>, 'query' | 'onChange'>;

/** Editor of the regression query type: format and how long before and after each change to compare. */
export function RegressionEditor({ query, onChange }: Props) {
  const format = (
    (REGRESSION_FORMATS as readonly string[]).includes(query.format ?? '') ? query.format : 'table'
  ) as RegressionFormat;
  return (
    <Stack direction="column" gap={0.5}>
      <Radio
        label="Format"
        ariaLabel="Regression format"
        options={FORMAT_OPTIONS}
        value={format}
        onChange={(v) => onChange({ ...query, format: v })}
      />
      <InlineField label="Span" labelWidth={14} tooltip="How long before and after each change is compared">
        <Input
          aria-label="Span"
          width={12}
          value={query.span ?? ''}
          placeholder="30m"
          onChange={(e) => onChange(withField(query, 'span', e.currentTarget.value.trim()))}
        />
      </InlineField>
      <Text color="secondary" variant="bodySmall">
        Load (arrival rate) and prompt/output length mix are held comparable; a change of load alone is reported as not
        comparable, never as a regression.
      </Text>
    </Stack>
  );
}
