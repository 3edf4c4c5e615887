import React, { useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { Combobox, ComboboxOption, InlineField, MultiCombobox, RadioButtonGroup } from '@grafana/ui';

import { isValidStat, sortStats } from '../../statModel';
import { LATENCY_STAGES, STAGE_LABELS, STANDARD_STATS } from '../../types';

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
export function withField<Q extends object, K extends keyof Q>(query: Q, key: K, v: Q[K]): Q {
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
export function useStats<Q extends { stats?: string[] }>(query: Q, onChange: (q: Q) => void) {
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
): Array<ComboboxOption<string>> {
  const have = new Set(options.map((o) => o.value));
  const extra = (selected ?? []).filter((v) => !have.has(v)).map((v) => ({ label: v, value: v }));
  return [...comboboxOptions(options), ...extra];
}

/** SelectableValue options (the query-type registry's, the resources') as Combobox options. */
export function comboboxOptions<T extends string>(options: Array<SelectableValue<T>>): Array<ComboboxOption<T>> {
  return options
    .filter((o): o is SelectableValue<T> & { value: T } => typeof o.value === 'string')
    .map((o) => ({
      value: o.value,
      label: o.label ?? o.value,
      ...(o.description ? { description: o.description } : {}),
    }));
}

/**
 * A hidden second label naming a picker whose visible label is shared by several on the page
 * (the "Engine" of every target). A label element, not aria-labelledby: Combobox gives its
 * aria-labelledby to the menu too, which would then carry the same name as the input.
 */
function HiddenName({ id, name }: { id: string; name?: string }) {
  return name ? (
    <label htmlFor={id} hidden>
      {name}
    </label>
  ) : null;
}

interface MultiPickerProps {
  id: string;
  /** Accessible name when it differs from the field's label (several pickers of one label on a page). */
  ariaLabel?: string;
  value: string[] | undefined;
  options: Array<SelectableValue<string>>;
  loading?: boolean;
  placeholder?: string;
  width?: number;
  /** Typed values are accepted (default true): custom quantiles, $variables, names not seen yet. */
  allowCustom?: boolean;
  onChange: (v: string[]) => void;
}

/**
 * A multi-value picker (MultiCombobox) inside an InlineField, whose label names it through
 * `id`; `ariaLabel` names it when several share that label. (A component of its own because
 * InlineField overwrites its child's loading and aria props.)
 */
export function MultiPicker({
  id,
  ariaLabel,
  value,
  options,
  loading,
  placeholder,
  width,
  allowCustom = true,
  onChange,
}: MultiPickerProps) {
  return (
    <>
      <HiddenName id={id} name={ariaLabel} />
      <MultiCombobox
        id={id}
        width={width ?? 40}
        loading={loading}
        createCustomValue={allowCustom}
        placeholder={placeholder ?? 'all'}
        options={withSelected(options, value)}
        value={value ?? []}
        onChange={(v) => onChange(v.map((x) => x.value.trim()).filter((x) => x !== ''))}
      />
    </>
  );
}

interface MultiProps extends MultiPickerProps {
  label: string;
  tooltip: string;
  error?: string;
}

/** A labelled multi-value picker that accepts typed values (custom quantiles, $variables). */
export function Multi({ label, tooltip, error, loading, ...picker }: MultiProps) {
  return (
    <InlineField
      label={label}
      labelWidth={LW}
      tooltip={tooltip}
      invalid={Boolean(error)}
      error={error}
      loading={loading}
    >
      <MultiPicker {...picker} loading={loading} />
    </InlineField>
  );
}

interface SingleProps<T extends string> {
  id: string;
  /** Accessible name when it differs from the field's label. */
  ariaLabel?: string;
  options: Array<SelectableValue<T>>;
  value: T | undefined;
  width?: number;
  placeholder?: string;
  loading?: boolean;
  /** Typed values are accepted (a metric or label name not listed). */
  allowCustom?: boolean;
  onChange: (v: T) => void;
}

/**
 * A single-value picker (Combobox) inside an InlineField, whose label names it through `id`;
 * `ariaLabel` names it when several share that label.
 */
export function Single<T extends string>({
  id,
  ariaLabel,
  options,
  value,
  width,
  placeholder,
  loading,
  allowCustom,
  onChange,
}: SingleProps<T>) {
  const opts = comboboxOptions(options);
  if (value !== undefined && value !== '' && !opts.some((o) => o.value === value)) {
    opts.push({ label: value, value });
  }
  return (
    <>
      <HiddenName id={id} name={ariaLabel} />
      <Combobox<T>
        id={id}
        width={width ?? 40}
        placeholder={placeholder}
        loading={loading}
        createCustomValue={allowCustom}
        options={opts}
        value={value ?? null}
        onChange={(o) => onChange(o.value)}
      />
    </>
  );
}

/** Options of fixed values, each labelled by itself. */
export function valueOptions<T extends string>(values: readonly T[]): Array<SelectableValue<T>> {
  return values.map((v) => ({ label: v, value: v }));
}

interface RadioProps<T extends string> {
  label: string;
  /** Accessible name of the group; default the label. */
  ariaLabel?: string;
  tooltip?: string;
  options: Array<SelectableValue<T>>;
  value: T;
  onChange: (v: T) => void;
}

/** A labelled radio group of one field of the query (format, view, signal). */
export function Radio<T extends string>({ label, ariaLabel, tooltip, options, value, onChange }: RadioProps<T>) {
  return (
    <InlineField label={label} labelWidth={LW} tooltip={tooltip}>
      <RadioButtonGroup aria-label={ariaLabel ?? label} options={options} value={value} onChange={onChange} />
    </InlineField>
  );
}
