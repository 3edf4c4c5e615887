import React from 'react';
import { InlineField, RadioButtonGroup, Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { QueryOf } from '../../types';
import { withField } from './common';
import { ObjectivePicker, ProfilePicker } from './ProfilePicker';

type Props = Pick<QueryTypeEditorProps<'slo' | 'burn_rate'>, 'query' | 'profiles' | 'onChange'>;

/** Editor of the slo and burn_rate query types: profile and objectives. */
export function SLOEditor({ query, profiles, onChange }: Props) {
  return (
    <Stack direction="column" gap={0.5}>
      <Stack gap={0.5} wrap="wrap">
        <ProfilePicker
          profiles={profiles}
          profile={query.profile}
          allowAll
          onChange={(p) => onChange(withField(withField(query, 'profile', p), 'objectives', undefined))}
        />
        <ObjectivePicker
          profiles={profiles}
          profile={query.profile}
          value={query.objectives}
          onChange={(v) => onChange(withField(query, 'objectives', v))}
        />
      </Stack>
      {query.queryType === 'slo' && (
        <InlineField
          label="Source"
          labelWidth={14}
          tooltip="engine: the engine's histograms and finish reasons; probe: the client-side probes of the targets (latency as users see it, failed probe requests as an availability SLI)"
        >
          <RadioButtonGroup
            aria-label="Source"
            options={[
              { label: 'engine', value: 'engine' },
              { label: 'probe', value: 'probe' },
            ]}
            value={query.source ?? 'engine'}
            onChange={(v) => onChange(v === 'engine' ? withoutSource(query) : { ...query, source: 'probe' })}
          />
        </InlineField>
      )}
      {query.queryType === 'burn_rate' && (
        <InlineField
          label="Output"
          labelWidth={14}
          tooltip="An alert rule on the status alone needs only the status series; a 'for 5m' rule on sustained degradation reads the 2-minute burn on the favourable bound"
        >
          <RadioButtonGroup
            aria-label="Burn rate output"
            options={[
              { label: 'Burn rates and status', value: 'timeseries' },
              { label: 'Status only', value: 'status' },
              { label: 'Sustained (2m)', value: 'sustained' },
              { label: 'Budget left', value: 'budget' },
            ]}
            value={
              query.format === 'status' || query.format === 'sustained' || query.format === 'budget'
                ? query.format
                : 'timeseries'
            }
            onChange={(v) =>
              onChange(
                v === 'status' || v === 'sustained' || v === 'budget' ? { ...query, format: v } : withoutFormat(query)
              )
            }
          />
        </InlineField>
      )}
      <Text color="secondary" variant="bodySmall">
        {query.queryType === 'burn_rate'
          ? 'One series per objective, window (5m … 3d) and group, plus status (0 ok, 0.5 possible, 1 ticket, 2 page): an alert rule can threshold status ≥ 2 directly.'
          : 'One row per objective and group: attainment with its exact bracket, quantile at the target ratio, budget left, burn rates and status.'}
      </Text>
    </Stack>
  );
}

function withoutSource(q: QueryOf<'slo'>): QueryOf<'slo'> {
  const next = { ...q };
  delete next.source;
  return next;
}

function withoutFormat(q: QueryOf<'burn_rate'>): QueryOf<'burn_rate'> {
  const next = { ...q };
  delete next.format;
  return next;
}
