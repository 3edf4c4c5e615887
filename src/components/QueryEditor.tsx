import React, { useState } from 'react';
import { QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, InlineSwitch, Input, MultiSelect, RadioButtonGroup, Select, Stack, Text } from '@grafana/ui';

import type { DataSource } from '../datasource';
import { isValidStat, sortStats, switchQueryType, USES } from '../queryModel';
import { EventsEditor } from './editors/EventsEditor';
import {
  BREAKDOWN_FORMATS,
  Estimator,
  GPU_SIGNALS,
  GROUP_BY,
  GroupBy,
  InferscopeOptions,
  InferscopeQuery,
  LATENCY_STAGES,
  QUERY_TYPE_DESCRIPTIONS,
  QUERY_TYPES,
  QueryType,
  STAGE_LABELS,
  STANDARD_STATS,
  BreakdownFormat,
} from '../types';
import { DiagnosisEditor } from './editors/DiagnosisEditor';
import { BucketsEditor } from './editors/BucketsEditor';
import { GoodputEditor } from './editors/GoodputEditor';
import { ProfilePicker } from './editors/ProfilePicker';
import { SLOEditor } from './editors/SLOEditor';
import { KeyValueEditor } from './KeyValueEditor';
import { useResourceOptions, variableOptions } from './useResourceOptions';

type Props = QueryEditorProps<DataSource, InferscopeQuery, InferscopeOptions>;

const LW = 14;

const TYPE_OPTIONS: Array<SelectableValue<QueryType>> = QUERY_TYPES.map((t) => ({
  label: t,
  value: t,
  description: QUERY_TYPE_DESCRIPTIONS[t],
}));

const STAGE_OPTIONS: Array<SelectableValue<string>> = LATENCY_STAGES.map((s) => ({
  label: s,
  value: s,
  description: STAGE_LABELS[s],
}));

const STAT_OPTIONS: Array<SelectableValue<string>> = STANDARD_STATS.map((s) => ({
  label: s,
  value: s,
  description: s === 'mean' ? 'Window mean from _sum / _count (exact)' : `${s.slice(1)}th percentile`,
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

const GROUP_OPTIONS: Array<SelectableValue<GroupBy>> = GROUP_BY.map((g) => ({ label: g, value: g }));

const FORMAT_OPTIONS: Array<SelectableValue<BreakdownFormat>> = BREAKDOWN_FORMATS.map((f) => ({ label: f, value: f }));

const GPU_SIGNAL_OPTIONS: Array<SelectableValue<string>> = GPU_SIGNALS.map((s) => ({ label: s, value: s }));

/** Adds selected values missing from the options (typed values, variables) so they render. */
function withSelected(
  options: Array<SelectableValue<string>>,
  selected: string[] | undefined
): Array<SelectableValue<string>> {
  const have = new Set(options.map((o) => o.value));
  const extra = (selected ?? []).filter((v) => !have.has(v)).map((v) => ({ label: v, value: v }));
  return [...options, ...extra];
}

function values(v: Array<SelectableValue<string>>): string[] {
  return v.map((x) => x.value).filter((x): x is string => typeof x === 'string' && x !== '');
}

interface MultiProps {
  label: string;
  tooltip: string;
  id: string;
  value: string[] | undefined;
  options: Array<SelectableValue<string>>;
  loading?: boolean;
  error?: string;
  placeholder?: string;
  width?: number;
  onChange: (v: string[]) => void;
  onCreate?: (v: string) => void;
}

function Multi({
  label,
  tooltip,
  id,
  value,
  options,
  loading,
  error,
  placeholder,
  width,
  onChange,
  onCreate,
}: MultiProps) {
  return (
    <InlineField label={label} labelWidth={LW} tooltip={tooltip} invalid={Boolean(error)} error={error}>
      <MultiSelect
        inputId={id}
        aria-label={label}
        width={width ?? 40}
        isLoading={loading}
        allowCustomValue
        onCreateOption={onCreate}
        placeholder={placeholder ?? 'all'}
        options={withSelected(options, value)}
        value={value ?? []}
        onChange={(v) => onChange(values(v))}
      />
    </InlineField>
  );
}

/** Query editor for every Inferscope query type (CONTRACTS.md "Query JSON"). */
export function QueryEditor({ query, onChange, onRunQuery, datasource }: Props) {
  const type: QueryType = (query.queryType as QueryType) ?? 'latency';
  const uses = USES[type] ?? USES.latency;
  const targets = useResourceOptions(datasource, 'targets', uses.targets);
  const models = useResourceOptions(datasource, 'models', uses.models);
  const agents = useResourceOptions(datasource, 'agents', type === 'gpu');
  const gpus = useResourceOptions(datasource, 'gpus', type === 'gpu');
  const [statError, setStatError] = useState<string | undefined>();
  const [windowText, setWindowText] = useState(query.window ?? '');
  const [metricText, setMetricText] = useState(query.metric ?? '');
  const profiles = datasource?.sloProfiles;

  const change = (next: InferscopeQuery, run = true) => {
    onChange(next);
    if (run) {
      onRunQuery();
    }
  };

  const set = <K extends keyof InferscopeQuery>(key: K, v: InferscopeQuery[K], run = true) => {
    const next = { ...query, [key]: v };
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) {
      delete next[key];
    }
    change(next, run);
  };

  const setStats = (stats: string[]) => {
    const bad = stats.filter((s) => !s.startsWith('$') && !isValidStat(s));
    if (bad.length > 0) {
      setStatError(`"${bad[0]}" is not mean or a quantile such as p99.9`);
      return;
    }
    setStatError(undefined);
    set('stats', sortStats(stats));
  };

  return (
    <Stack direction="column" gap={0.5}>
      <Stack gap={0.5} wrap="wrap">
        <InlineField label="Query type" labelWidth={LW} tooltip={QUERY_TYPE_DESCRIPTIONS[type]}>
          <Select
            inputId="inferscope-query-type"
            aria-label="Query type"
            width={24}
            options={TYPE_OPTIONS}
            value={type}
            onChange={(v) => v.value && change(switchQueryType(query, v.value))}
          />
        </InlineField>
        {uses.groupBy && (
          <InlineField
            label="Group by"
            labelWidth={LW}
            tooltip="Split series by target (job), model or engine (data-parallel rank)"
          >
            <RadioButtonGroup
              aria-label="Group by"
              options={GROUP_OPTIONS}
              value={query.groupBy ?? 'none'}
              onChange={(v) => set('groupBy', v)}
            />
          </InlineField>
        )}
        {uses.window && (
          <InlineField
            label="Window"
            labelWidth={LW}
            tooltip="Rate window, e.g. 1m or 5m. Empty: max(interval, 4 × scrape interval)"
          >
            <Input
              id="inferscope-window"
              aria-label="Window"
              width={12}
              placeholder="auto"
              value={windowText}
              onChange={(e) => setWindowText(e.currentTarget.value)}
              onBlur={() => windowText.trim() !== (query.window ?? '') && set('window', windowText.trim())}
            />
          </InlineField>
        )}
      </Stack>

      <Stack gap={0.5} wrap="wrap">
        {uses.targets && (
          <Multi
            label="Targets"
            id="inferscope-targets"
            tooltip="Configured target names; empty means all targets"
            value={query.targets}
            options={targets.options}
            loading={targets.loading}
            error={targets.error}
            onChange={(v) => set('targets', v)}
          />
        )}
        {uses.models && (
          <Multi
            label="Models"
            id="inferscope-models"
            tooltip="Model names (model_name label); empty means all models"
            value={query.models}
            options={models.options}
            loading={models.loading}
            error={models.error}
            onChange={(v) => set('models', v)}
          />
        )}
      </Stack>

      {type === 'latency' && (
        <>
          <Stack gap={0.5} wrap="wrap">
            <Multi
              label="Stages"
              id="inferscope-stages"
              tooltip="Request stages; an engine without a stage reports it as absent, never as zero"
              placeholder="choose stages"
              value={query.stages}
              options={[...STAGE_OPTIONS, ...variableOptions()]}
              onChange={(v) => set('stages', v)}
            />
            <Multi
              label="Stats"
              id="inferscope-stats"
              tooltip="mean, or quantiles pNN; type a custom one such as p99.9 and press Enter"
              placeholder="choose stats"
              value={query.stats}
              options={[...STAT_OPTIONS, ...variableOptions()]}
              error={statError}
              onChange={setStats}
              onCreate={(v) => setStats([...(query.stats ?? []), v.trim()])}
            />
          </Stack>
          <Stack gap={0.5} wrap="wrap">
            <InlineField
              label="Estimator"
              labelWidth={LW}
              tooltip="prometheus matches histogram_quantile; refined also uses the window mean and never leaves the bucket bounds"
            >
              <RadioButtonGroup
                aria-label="Estimator"
                options={ESTIMATOR_OPTIONS}
                value={query.estimator ?? 'prometheus'}
                onChange={(v) => set('estimator', v)}
              />
            </InlineField>
            <InlineSwitch
              id="inferscope-bounds"
              label="Bounds"
              showLabel
              aria-label="Bounds"
              title="Also return the edges of the bucket each quantile fell in (series stat=pNN, bound=lower/upper), to draw a band"
              value={query.bounds ?? true}
              onChange={(e) => set('bounds', e.currentTarget.checked)}
            />
          </Stack>
        </>
      )}

      {type === 'breakdown' && (
        <InlineField label="Format" labelWidth={LW} tooltip="Time series per stage, or one table row per group">
          <RadioButtonGroup
            aria-label="Format"
            options={FORMAT_OPTIONS}
            value={query.format ?? 'timeseries'}
            onChange={(v) => set('format', v)}
          />
        </InlineField>
      )}

      {type === 'raw' && (
        <>
          <InlineField
            label="Metric"
            labelWidth={LW}
            tooltip="Metric name exactly as scraped, e.g. vllm:num_requests_running"
          >
            <Input
              id="inferscope-metric"
              aria-label="Metric"
              width={50}
              placeholder="vllm:num_requests_running"
              value={metricText}
              onChange={(e) => setMetricText(e.currentTarget.value)}
              onBlur={() => metricText.trim() !== (query.metric ?? '') && set('metric', metricText.trim())}
            />
          </InlineField>
          <InlineField label="Matchers" labelWidth={LW} tooltip="Label equality matchers (label = value)">
            <KeyValueEditor
              name="Matcher"
              addLabel="Add matcher"
              value={query.matchers}
              keyPlaceholder="label"
              valuePlaceholder="value"
              onChange={(m) => change({ ...query, matchers: m }, false)}
            />
          </InlineField>
        </>
      )}

      {type === 'gpu' && (
        <Stack gap={0.5} wrap="wrap">
          <Multi
            label="Agents"
            id="inferscope-agents"
            tooltip="GPU agent names; empty means all agents"
            value={query.agents}
            options={agents.options}
            loading={agents.loading}
            error={agents.error}
            onChange={(v) => set('agents', v)}
          />
          <Multi
            label="GPUs"
            id="inferscope-gpus"
            tooltip="GPU indices; empty means all GPUs"
            value={query.gpus}
            options={gpus.options}
            loading={gpus.loading}
            error={gpus.error}
            width={24}
            onChange={(v) => set('gpus', v)}
          />
          <Multi
            label="Signals"
            id="inferscope-signals"
            tooltip="Canonical GPU signals; throttle_reasons comes as a state timeline"
            placeholder="choose signals"
            value={query.signals}
            options={[...GPU_SIGNAL_OPTIONS, ...variableOptions()]}
            onChange={(v) => set('signals', v)}
          />
        </Stack>
      )}

      {type === 'diagnosis' && <DiagnosisEditor query={query} onChange={(q) => change(q)} />}
      {type === 'events' && <EventsEditor />}
      {type === 'latency' && (
        <ProfilePicker
          profiles={profiles}
          profile={query.profile}
          allowAll
          emptyLabel="none"
          tooltip="Draw this SLO profile's thresholds on its stages"
          onChange={(p) => set('profile', p)}
        />
      )}
      {(type === 'slo' || type === 'burn_rate') && (
        <SLOEditor query={query} profiles={profiles} onChange={(q) => change(q)} />
      )}
      {type === 'goodput' && <GoodputEditor query={query} profiles={profiles} onChange={(q) => change(q)} />}
      {type === 'buckets' && (
        <>
          <Stack gap={0.5} wrap="wrap">
            <Multi
              label="Stages"
              id="inferscope-stages"
              tooltip="Histogram stages; empty: the profile's stages, else ttft, itl and e2e"
              placeholder="default"
              value={query.stages}
              options={[...STAGE_OPTIONS, ...variableOptions()]}
              onChange={(v) => set('stages', v)}
            />
            <Multi
              label="Quantiles"
              id="inferscope-stats"
              tooltip="Quantiles pNN to place in the buckets; type p99.9 and press Enter"
              placeholder="p50, p90, p99"
              value={query.stats}
              options={[...STAT_OPTIONS.filter((o) => o.value !== 'mean'), ...variableOptions()]}
              error={statError}
              onChange={setStats}
              onCreate={(v) => setStats([...(query.stats ?? []), v.trim()])}
            />
          </Stack>
          <BucketsEditor query={query} profiles={profiles} onChange={(q) => change(q)} />
        </>
      )}

      {type === 'targets' && (
        <Stack direction="column" gap={0.5}>
          <InlineField
            label="Format"
            labelWidth={LW}
            tooltip="The inventory table, or numbers for a telemetry-missing alert rule"
          >
            <RadioButtonGroup
              aria-label="Targets format"
              options={[
                { label: 'Inventory', value: 'table' },
                { label: 'Telemetry', value: 'telemetry' },
              ]}
              value={query.format === 'telemetry' ? 'telemetry' : 'table'}
              onChange={(v) => set('format', v === 'telemetry' ? 'telemetry' : undefined)}
            />
          </InlineField>
          <Text color="secondary" variant="bodySmall">
            {query.format === 'telemetry'
              ? 'One number per target and signal it exported in the range: 1 when its family is missing from the latest scrape, else 0.'
              : 'One row per target: engine, detected version, models, up, last scrape, scrape duration, series and last error.'}
          </Text>
        </Stack>
      )}
    </Stack>
  );
}
