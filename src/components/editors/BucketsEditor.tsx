import React, { useState } from 'react';
import { InlineField, Input, Stack } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { variableOptions } from '../useResourceOptions';
import { LW, Multi, STAGE_OPTIONS, STAT_OPTIONS, useStats, withField } from './common';
import { ProfilePicker } from './ProfilePicker';

/** Parses "0.5, 2" into positive numbers of seconds; an error names the first bad entry. */
export function parseThresholds(text: string): { values: number[]; error?: string } {
  const values: number[] = [];
  for (const part of text.split(',')) {
    const p = part.trim();
    if (p === '') {
      continue;
    }
    const n = Number(p);
    if (!Number.isFinite(n) || n <= 0) {
      return { values, error: `"${p}" is not a positive number of seconds` };
    }
    if (!values.includes(n)) {
      values.push(n);
    }
  }
  return { values };
}

/**
 * Editor of the buckets query type: stages and quantiles to place in the
 * bucket layout, a profile whose thresholds to place and extra thresholds
 * in seconds.
 */
export function BucketsEditor({
  query,
  profiles,
  onChange,
}: Pick<QueryTypeEditorProps<'buckets'>, 'query' | 'profiles' | 'onChange'>) {
  const [text, setText] = useState((query.thresholds ?? []).join(', '));
  const [error, setError] = useState<string | undefined>();
  const stats = useStats(query, onChange);
  return (
    <>
      <Stack gap={0.5} wrap="wrap">
        <Multi
          label="Stages"
          id="inferscope-stages"
          tooltip="Histogram stages; empty: the profile's stages, else ttft, itl and e2e"
          placeholder="default"
          value={query.stages}
          options={[...STAGE_OPTIONS, ...variableOptions()]}
          onChange={(v) => onChange(withField(query, 'stages', v))}
        />
        <Multi
          label="Quantiles"
          id="inferscope-stats"
          tooltip="Quantiles pNN to place in the buckets; type p99.9 and press Enter"
          placeholder="p50, p90, p99"
          value={query.stats}
          options={[...STAT_OPTIONS.filter((o) => o.value !== 'mean'), ...variableOptions()]}
          error={stats.error}
          onChange={stats.setStats}
        />
      </Stack>
      <Stack gap={0.5} wrap="wrap">
        <ProfilePicker
          profiles={profiles}
          profile={query.profile}
          allowAll
          onChange={(p) => {
            const next = { ...query, profile: p };
            if (!p) {
              delete next.profile;
            }
            onChange(next);
          }}
        />
        <InlineField
          label="Thresholds"
          labelWidth={LW}
          tooltip="Seconds, comma-separated: each is placed in the bucket layout (a threshold that is not a bound is flagged)"
          invalid={Boolean(error)}
          error={error}
        >
          <Input
            id="inferscope-thresholds"
            aria-label="Thresholds"
            width={30}
            placeholder="0.5, 2"
            value={text}
            onChange={(e) => setText(e.currentTarget.value)}
            onBlur={() => {
              const r = parseThresholds(text);
              setError(r.error);
              if (!r.error) {
                onChange(withField(query, 'thresholds', r.values));
              }
            }}
          />
        </InlineField>
      </Stack>
    </>
  );
}
