import React from 'react';
import { InlineField, Input, Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { COST_STATS } from '../../types';
import { variableOptions } from '../useResourceOptions';
import { LW, Multi, withField } from './common';
import { ProfilePicker } from './ProfilePicker';

const COST_STAT_OPTIONS = COST_STATS.map((s) => ({ label: s.replace(/_/g, ' '), value: s }));

/**
 * Editor of the cost query type: which series to keep, and a profile whose
 * goodput prices the tokens of requests meeting the SLO.
 */
export function CostEditor({
  query,
  profiles,
  onChange,
}: Pick<QueryTypeEditorProps<'cost'>, 'query' | 'profiles' | 'onChange'>) {
  return (
    <Stack direction="column" gap={0.5}>
      <Stack gap={0.5} wrap="wrap">
        <Multi
          label="Series"
          id="inferscope-cost-stats"
          tooltip="Cost and energy series to keep; empty: all"
          value={query.series}
          options={[...COST_STAT_OPTIONS, ...variableOptions()]}
          onChange={(v) => onChange(withField(query, 'series', v))}
        />
        <ProfilePicker
          profiles={profiles}
          profile={query.profile}
          allowAll
          emptyLabel="no goodput cost"
          tooltip="Profile whose goodput bounds price the tokens of requests meeting the SLO"
          onChange={(p) => {
            const next = { ...query, profile: p };
            if (!p) {
              delete next.profile;
            }
            onChange(next);
          }}
        />
        <InlineField
          label="Baseline"
          labelWidth={LW}
          tooltip="A duration such as 7d: adds cost_spike_ratio, the cost per 1M tokens over its mean over the baseline"
        >
          <Input
            id="inferscope-cost-baseline"
            width={12}
            placeholder="none"
            defaultValue={query.baseline ?? ''}
            onBlur={(e) => onChange(withField(query, 'baseline', e.currentTarget.value.trim()))}
          />
        </InlineField>
      </Stack>
      <Text color="secondary" variant="bodySmall">
        Prices come from the data source settings (costPerHour per target, costPerGPUHour per GPU agent,
        energyPricePerKWh). With a profile, the cost per 1M good tokens is bounded by the goodput bounds.
      </Text>
    </Stack>
  );
}
