import React, { useCallback } from 'react';
import { InlineField } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { EditorDataSource } from '../../types';
import { KeyValueEditor } from '../KeyValueEditor';
import { useLoaded } from '../useResourceOptions';
import { LW, Single, withField } from './common';

/**
 * The metric names stored for the query's targets (all targets when none, or when one is a
 * $variable), read again when the targets change. `error` is the sentence of a failed call.
 */
function useMetricNames(datasource: EditorDataSource, targets: string[] | undefined) {
  const literal = (targets ?? []).some((t) => t.includes('$')) ? [] : (targets ?? []);
  const key = JSON.stringify(literal);
  const load = useCallback(() => datasource.metricNames(JSON.parse(key) as string[]), [datasource, key]);
  const { value, loading, error } = useLoaded(load);
  return {
    names: value ?? [],
    loading,
    error: error === undefined ? undefined : `Could not list the stored metric names: ${error}`,
  };
}

/**
 * Editor of the raw query type: one scraped metric by name, picked from the names stored for
 * the query's targets (GET /metricnames) or typed, and label equality matchers. Matcher edits
 * change the query without running it.
 */
export function RawEditor({ query, datasource, onChange }: QueryTypeEditorProps<'raw'>) {
  const metrics = useMetricNames(datasource, query.targets);
  return (
    <>
      <InlineField
        label="Metric"
        labelWidth={LW}
        tooltip="Metric name exactly as stored, e.g. vllm:num_requests_running: the names stored for the chosen targets in the last hour are listed; another may be typed"
        invalid={Boolean(metrics.error)}
        error={metrics.error}
        loading={metrics.loading}
      >
        <Single
          id="inferscope-metric"
          width={50}
          placeholder="vllm:num_requests_running"
          loading={metrics.loading}
          allowCustom
          options={metrics.names.map((n) => ({ label: n, value: n }))}
          value={query.metric || undefined}
          onChange={(m) => m.trim() !== (query.metric ?? '') && onChange(withField(query, 'metric', m.trim()))}
        />
      </InlineField>
      <InlineField label="Matchers" labelWidth={LW} tooltip="Label equality matchers (label = value)">
        <KeyValueEditor
          name="Matcher"
          addLabel="Add matcher"
          value={query.matchers}
          keyPlaceholder="label"
          valuePlaceholder="value"
          onChange={(m) => onChange({ ...query, matchers: m }, false)}
        />
      </InlineField>
    </>
  );
}
