import React, { useEffect, useState } from 'react';
import { InlineField } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { EditorDataSource } from '../../types';
import { KeyValueEditor } from '../KeyValueEditor';
import { LW, Single, withField } from './common';

/**
 * The metric names stored for the query's targets (all targets when none, or when one is a
 * $variable), read again when the targets change. `error` is the sentence of a failed call.
 */
function useMetricNames(datasource: EditorDataSource | undefined, targets: string[] | undefined) {
  const literal = (targets ?? []).some((t) => t.includes('$')) ? [] : (targets ?? []);
  const key = literal.join('\u0000');
  const [state, setState] = useState<{ names: string[]; loading: boolean; error?: string }>({
    names: [],
    loading: true,
  });
  useEffect(() => {
    if (!datasource) {
      setState({ names: [], loading: false });
      return;
    }
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    datasource
      .metricNames(key === '' ? [] : key.split('\u0000'))
      .then((names) => live && setState({ names, loading: false }))
      .catch((e: unknown) => {
        const msg = e && typeof e === 'object' && 'message' in e ? String((e as Error).message) : String(e);
        if (live) {
          setState({ names: [], loading: false, error: `Could not list the stored metric names: ${msg}` });
        }
      });
    return () => {
      live = false;
    };
  }, [datasource, key]);
  return state;
}

/**
 * Editor of the raw query type: one scraped metric by name, picked from the names stored for
 * the query's targets (GET /metricnames) or typed, and label equality matchers. Matcher edits
 * change the query without running it.
 */
export function RawEditor({ query, datasource, onChange }: QueryTypeEditorProps) {
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
