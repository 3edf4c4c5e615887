import React, { useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, MultiSelect } from '@grafana/ui';

import { isValidStat, sortStats } from '../../statModel';
import { InferscopeQuery, LATENCY_STAGES, STAGE_LABELS, STANDARD_STATS } from '../../types';

/** Label width of every inline field of the query editors. */
export const LW = 14;

export const STAGE_OPTIONS: Array<SelectableValue<string>> = LATENCY_STAGES.map((s) => ({
  label: s,
  value: s,
  description: STAGE_LABELS[s],
}));

export const STAT_OPTIONS: Array<SelectableValue<string>> = STANDARD_STATS.map((s) => ({
  label: s,
  value: s,
  description: s === 'mean' ? 'Window mean from _sum / _count (exact)' : `${s.slice(1)}th percentile`,
}));

/**
 * Returns the query with `key` set to `v`; an empty value (undefined, "" or
 * an empty list) removes the key, so the JSON holds only what was chosen.
 */
export function withField<K extends keyof InferscopeQuery>(
  query: InferscopeQuery,
  key: K,
  v: InferscopeQuery[K]
): InferscopeQuery {
  const next = { ...query, [key]: v };
  if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0)) {
    delete next[key];
  }
  return next;
}

/**
 * The stats of a latency or buckets query, checked as typed: a value that is
 * neither a $variable, mean nor a quantile pNN[.N] is refused with `error`;
 * accepted lists are sorted (mean first, quantiles ascending).
 */
export function useStats(query: InferscopeQuery, onChange: (q: InferscopeQuery) => void) {
  const [error, setError] = useState<string | undefined>();
  const setStats = (stats: string[]) => {
    const bad = stats.filter((s) => !s.startsWith('$') && !isValidStat(s));
    if (bad.length > 0) {
      setError(`"${bad[0]}" is not mean or a quantile such as p99.9`);
      return;
    }
    setError(undefined);
    onChange(withField(query, 'stats', sortStats(stats)));
  };
  return { error, setStats };
}

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
  /** Accessible name when it differs from the label (several pickers of one label on a page). */
  ariaLabel?: string;
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

/** A labelled multi-select that accepts typed values (custom quantiles, $variables). */
export function Multi({
  label,
  ariaLabel,
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
        aria-label={ariaLabel ?? label}
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
