import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, InlineSwitch, RadioButtonGroup, Stack } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { Estimator, LATENCY_FORMATS, LatencyFormat, Source } from '../../types';
import { variableOptions } from '../useResourceOptions';
import { LW, Multi, STAGE_OPTIONS, STAT_OPTIONS, useStats, withField } from './common';
import { ProfilePicker } from './ProfilePicker';

const LATENCY_FORMAT_OPTIONS: Array<SelectableValue<LatencyFormat>> = LATENCY_FORMATS.map((f) => ({
  label: f,
  value: f,
}));

const ESTIMATOR_OPTIONS: Array<SelectableValue<Estimator>> = [
  {
    label: 'prometheus',
    value: 'prometheus',
    description: 'Identical to histogram_quantile (linear inside the bucket)',
  },
  {
    label: 'refined',
    value: 'refined',
    description: 'Uses the bucket counts and the exact mean; stays within the bucket bounds',
  },
];

const SOURCE_OPTIONS: Array<SelectableValue<Source>> = [
  { label: 'engine', value: 'engine', description: "The engine's own histograms" },
  {
    label: 'probe',
    value: 'probe',
    description: 'The client-side probes of the targets: TTFT, ITL, TPOT and E2E as users see them',
  },
];

/**
 * Editor of the latency query type: stages, stats (mean or any quantile
 * pNN[.N], checked as typed), estimator, bounds, and an SLO profile whose
 * thresholds the frames carry.
 */
export function LatencyEditor({ query, onChange, profiles }: QueryTypeEditorProps<'latency'>) {
  const { error, setStats } = useStats(query, onChange);
  return (
    <>
      <Stack gap={0.5} wrap="wrap">
        <Multi
          label="Stages"
          id="inferscope-stages"
          tooltip="Request stages; an engine without a stage reports it as absent, never as zero"
          placeholder="choose stages"
          value={query.stages}
          options={[...STAGE_OPTIONS, ...variableOptions()]}
          onChange={(v) => onChange(withField(query, 'stages', v))}
        />
        <Multi
          label="Stats"
          id="inferscope-stats"
          tooltip="mean, or quantiles pNN; type a custom one such as p99.9 and press Enter"
          placeholder="choose stats"
          value={query.stats}
          options={[...STAT_OPTIONS, ...variableOptions()]}
          error={error}
          onChange={setStats}
        />
      </Stack>
      <Stack gap={0.5} wrap="wrap">
        <InlineField
          label="Format"
          labelWidth={LW}
          tooltip="timeseries: the statistics as series; heatmap: requests/s per histogram bucket over time, for Grafana's heatmap panel (stats, estimator and bounds unused)"
        >
          <RadioButtonGroup
            aria-label="Format"
            options={LATENCY_FORMAT_OPTIONS}
            value={query.format ?? 'timeseries'}
            onChange={(v) => onChange(withField(query, 'format', v))}
          />
        </InlineField>
        <InlineField
          label="Estimator"
          labelWidth={LW}
          tooltip="prometheus matches histogram_quantile; refined also uses the window mean and never leaves the bucket bounds"
        >
          <RadioButtonGroup
            aria-label="Estimator"
            options={ESTIMATOR_OPTIONS}
            value={query.estimator ?? 'prometheus'}
            onChange={(v) => onChange(withField(query, 'estimator', v))}
          />
        </InlineField>
        <InlineField
          label="Source"
          labelWidth={LW}
          tooltip="engine: the engine's histograms; probe: the client-side probes configured for the targets (settings probes[])"
        >
          <RadioButtonGroup
            aria-label="Source"
            options={SOURCE_OPTIONS}
            value={query.source ?? 'engine'}
            onChange={(v) => onChange(withField(query, 'source', v))}
          />
        </InlineField>
        <InlineSwitch
          id="inferscope-bounds"
          label="Bounds"
          showLabel
          aria-label="Bounds"
          title="Also return the edges of the bucket each quantile fell in (series stat=pNN, bound=lower/upper), to draw a band"
          value={query.bounds ?? true}
          onChange={(e) => onChange(withField(query, 'bounds', e.currentTarget.checked))}
        />
      </Stack>
      <ProfilePicker
        profiles={profiles}
        profile={query.profile}
        allowAll
        emptyLabel="none"
        tooltip="Draw this SLO profile's thresholds on its stages"
        onChange={(p) => onChange(withField(query, 'profile', p))}
      />
    </>
  );
}
