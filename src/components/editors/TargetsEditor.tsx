import React from 'react';
import { Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { Radio, withField } from './common';

/** Editor of the targets query type: the inventory table, or numbers for a telemetry-missing alert rule. */
export function TargetsEditor({ query, onChange }: QueryTypeEditorProps<'targets'>) {
  return (
    <Stack direction="column" gap={0.5}>
      <Radio
        label="Format"
        ariaLabel="Targets format"
        tooltip="The inventory table, or numbers for a telemetry-missing alert rule"
        options={[
          { label: 'Inventory', value: 'table' },
          { label: 'Telemetry', value: 'telemetry' },
        ]}
        value={query.format === 'telemetry' ? 'telemetry' : 'table'}
        onChange={(v) => onChange(withField(query, 'format', v === 'telemetry' ? 'telemetry' : undefined))}
      />
      <Text color="secondary" variant="bodySmall">
        {query.format === 'telemetry'
          ? 'One number per target and signal it exported in the range: 1 when its family is missing from the latest scrape, else 0.'
          : 'One row per target: engine, detected version, models, up, last scrape, scrape duration, series and last error.'}
      </Text>
    </Stack>
  );
}
