import React from 'react';
import { InlineField, Input, Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';

type Props = Pick<QueryTypeEditorProps<'benchmark'>, 'query' | 'onChange'>;

/** Editor of the benchmark query type: the baseline's name (a file of the settings' baselinesPath). */
export function BenchmarkEditor({ query, onChange }: Props) {
  return (
    <Stack direction="column" gap={0.5}>
      <InlineField label="Baseline" labelWidth={14} tooltip="File name without .json in the baselines directory">
        <Input
          aria-label="Baseline"
          width={40}
          value={query.baseline ?? ''}
          placeholder="llama-7b-a100-rate8"
          onChange={(e) => onChange({ ...query, baseline: e.currentTarget.value.trim() })}
        />
      </InlineField>
      <Text color="secondary" variant="bodySmall">
        Only windows whose request rate (or concurrency) is within the tolerance of the baseline&apos;s are compared;
        the table says which.
      </Text>
    </Stack>
  );
}
