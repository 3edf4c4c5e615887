import React, { useState } from 'react';
import { InlineField, Input } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { KeyValueEditor } from '../KeyValueEditor';
import { LW, withField } from './common';

/**
 * Editor of the raw query type: one scraped metric by name and label
 * equality matchers. The metric is set when the field loses focus; matcher
 * edits change the query without running it.
 */
export function RawEditor({ query, onChange }: QueryTypeEditorProps) {
  const [metricText, setMetricText] = useState(query.metric ?? '');
  return (
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
          onBlur={() =>
            metricText.trim() !== (query.metric ?? '') && onChange(withField(query, 'metric', metricText.trim()))
          }
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
