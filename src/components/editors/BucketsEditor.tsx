import React, { useState } from 'react';
import { InlineField, Input, Stack } from '@grafana/ui';

import { InferscopeQuery, ProfileConfig } from '../../types';
import { ProfilePicker } from './ProfilePicker';

const LW = 14;

interface Props {
  query: InferscopeQuery;
  profiles: ProfileConfig[] | undefined;
  onChange: (q: InferscopeQuery) => void;
}

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
 * Editor of the buckets query type: a profile whose thresholds to place and
 * extra thresholds in seconds (stages and quantiles use the latency pickers).
 */
export function BucketsEditor({ query, profiles, onChange }: Props) {
  const [text, setText] = useState((query.thresholds ?? []).join(', '));
  const [error, setError] = useState<string | undefined>();
  return (
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
              const next: InferscopeQuery = { ...query, thresholds: r.values };
              if (r.values.length === 0) {
                delete next.thresholds;
              }
              onChange(next);
            }
          }}
        />
      </InlineField>
    </Stack>
  );
}
