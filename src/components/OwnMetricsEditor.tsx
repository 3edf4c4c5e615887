import React, { useState } from 'react';
import { Button, InlineField, Stack, Text } from '@grafana/ui';
import { ConfigSubSection } from '@grafana/plugin-ui';

import { Settings, updateTarget } from '../configModel';
import {
  candidatesFor,
  nextOwnSignal,
  OWN_SIGNALS,
  ownMetricsErrors,
  ownSignalKind,
  PageMetrics,
  setOwnMetric,
} from '../ownMetricsModel';
import { TargetConfig } from '../types';
import { Single } from './editors/common';
import { getSavedResource, isSaved, resourceError } from './savedResource';

const LW = 22;

interface Props {
  /** The target's index in jsonData.targets. */
  i: number;
  target: TargetConfig;
  remote: boolean;
  options: Settings;
  onOptionsChange: (o: Settings) => void;
}

/** The names on a saved target's page (GET /pagemetrics?target=), read on demand. */
function usePageMetrics(options: Settings, name: string) {
  const [state, setState] = useState<{ loading: boolean; page?: PageMetrics; error?: string; tried: boolean }>({
    loading: false,
    tried: false,
  });
  const read = async () => {
    setState({ loading: true, tried: true });
    try {
      const page = await getSavedResource<PageMetrics>(options, 'pagemetrics', { target: name });
      setState({ loading: false, page, tried: true });
    } catch (e: unknown) {
      setState({ loading: false, error: resourceError(e), tried: true });
    }
  };
  return { ...state, read, canRead: isSaved(options) && name !== '' };
}

/** One line saying what the page offers, e.g. "3 histograms, 1 counter, 1 gauge, labels dtype, model". */
function pageSummary(p: PageMetrics): string {
  const n = (k: number, one: string) => `${k} ${one}${k === 1 ? '' : 's'}`;
  const labels = p.labels.length > 0 ? `; labels ${p.labels.join(', ')}` : '';
  return `On the page: ${n(p.histograms.length, 'histogram')}, ${n(p.counters.length, 'counter')}, ${n(p.gauges.length, 'gauge')}${labels}.`;
}

/**
 * "Your own metrics" of one target (targets[i].metrics and modelLabel, docs/own-metrics.md):
 * for a service instrumented by hand, each row maps a signal (ttft, tpot, queue_time,
 * prompt_tokens, …) to the service's metric, picked from the names found on the saved
 * target's page (GET /pagemetrics: histograms for latency signals, counters for token and
 * request counts, gauges for running and waiting) or typed; the model label is picked from the
 * page's label names. Each field is checked as typed with pkg/settings' sentences.
 */
export function OwnMetricsEditor({ i, target: t, remote, options, onOptionsChange }: Props) {
  const page = usePageMetrics(options, t.name);
  const n = i + 1;
  const metrics = t.metrics ?? {};
  const rows = Object.entries(metrics);
  const errs = ownMetricsErrors(i, t, remote);
  if (remote && rows.length === 0) {
    return null; // the collector renames while scraping: embedded mode only
  }
  const addRow = () => {
    const s = nextOwnSignal(t);
    if (s) {
      onOptionsChange(setOwnMetric(options, i, s, ''));
      if (page.canRead && !page.tried) {
        void page.read();
      }
    }
  };
  return (
    <ConfigSubSection
      title="Your own metrics"
      description="For a service instrumented by hand (not an engine's own page): which of its metrics hold each signal. Every query type then reads them as an engine's; their other labels can be grouped by."
      isCollapsible
      isInitiallyOpen={rows.length > 0}
    >
      <Stack direction="column" gap={0.5}>
        <Stack gap={1} alignItems="center" wrap="wrap">
          <Button
            variant="secondary"
            size="sm"
            icon="sync"
            disabled={!page.canRead || page.loading}
            aria-label={`Target ${n} read the page's metric names`}
            onClick={() => void page.read()}
          >
            Read the names on the page
          </Button>
          <Text color={page.error ? 'error' : 'secondary'} variant="bodySmall">
            {!page.canRead
              ? 'Save the data source to list the names found on this target’s page; names can be typed meanwhile.'
              : page.loading
                ? 'Reading the page…'
                : (page.error ?? (page.page ? pageSummary(page.page) : ''))}
          </Text>
        </Stack>
        {errs.map && (
          <Text color="error" variant="bodySmall">
            {errs.map}
          </Text>
        )}
        {rows.map(([signal, metric], r) => {
          const kind = ownSignalKind(signal) ?? 'histogram';
          const signalOptions = OWN_SIGNALS.filter((s) => s.signal === signal || !(s.signal in metrics)).map((s) => ({
            label: s.signal,
            value: s.signal,
            description: s.description,
          }));
          const err = errs.signals[signal];
          return (
            <Stack key={r} gap={0.5} wrap="wrap" alignItems="flex-start">
              <InlineField label="Signal" labelWidth={LW}>
                <Single
                  id={`target-${i}-own-${r}-signal`}
                  ariaLabel={`Target ${n} own metric ${r + 1} signal`}
                  width={24}
                  options={signalOptions}
                  value={signal}
                  onChange={(s) => onOptionsChange(setOwnMetric(options, i, s, metric, signal))}
                />
              </InlineField>
              <InlineField
                label={kind === 'histogram' ? 'Histogram' : kind === 'counter' ? 'Counter' : 'Gauge'}
                labelWidth={12}
                invalid={Boolean(err)}
                error={err}
                tooltip={
                  kind === 'histogram'
                    ? 'Base name of a histogram in seconds (without _bucket, _sum, _count), e.g. llm_ttft_seconds'
                    : kind === 'counter'
                      ? 'Sample name of a counter, e.g. llm_prompt_tokens_total'
                      : 'Name of a gauge'
                }
              >
                <Single
                  id={`target-${i}-own-${r}-metric`}
                  ariaLabel={`Target ${n} metric for ${signal}`}
                  width={36}
                  allowCustom
                  loading={page.loading}
                  placeholder={kind === 'histogram' ? 'llm_ttft_seconds' : kind === 'counter' ? 'name_total' : 'name'}
                  options={candidatesFor(kind, page.page).map((m) => ({ label: m, value: m }))}
                  value={metric || undefined}
                  onChange={(m) => onOptionsChange(setOwnMetric(options, i, signal, m.trim()))}
                />
              </InlineField>
              <Button
                variant="secondary"
                fill="text"
                size="sm"
                icon="trash-alt"
                aria-label={`Target ${n} remove the ${signal} mapping`}
                onClick={() => onOptionsChange(setOwnMetric(options, i, signal, undefined))}
              />
            </Stack>
          );
        })}
        <div>
          <Button icon="plus" variant="secondary" size="sm" disabled={!nextOwnSignal(t)} onClick={addRow}>
            Map a metric
          </Button>
        </div>
        {rows.length > 0 && (
          <InlineField
            label="Model label"
            labelWidth={LW}
            invalid={Boolean(errs.modelLabel)}
            error={errs.modelLabel}
            tooltip="The label of these metrics that holds the model (copied into model_name); none: they carry model_name, or the target's extra label model_name names the model"
          >
            <Single
              id={`target-${i}-model-label`}
              ariaLabel={`Target ${n} model label`}
              width={24}
              allowCustom
              options={[
                { label: 'none', value: '', description: 'model_name on the metrics or in the extra labels' },
                ...(page.page?.labels ?? []).map((l) => ({ label: l, value: l })),
              ]}
              value={t.modelLabel ?? ''}
              onChange={(l) => onOptionsChange(updateTarget(options, i, { modelLabel: l.trim() || undefined }))}
            />
          </InlineField>
        )}
      </Stack>
    </ConfigSubSection>
  );
}
