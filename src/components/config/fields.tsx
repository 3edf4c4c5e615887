import React from 'react';
import { Button, InlineField, Input, Switch } from '@grafana/ui';

import { Settings } from '../../configModel';

/** Label width of every inline field of the settings page. */
export const LABEL_WIDTH = 22;

/** Props of every section of the settings page. */
export interface SectionProps {
  options: Settings;
  onOptionsChange: (o: Settings) => void;
}

/** What every input of an item's card takes: its element id, its accessible name and its value. */
export interface FieldProps<V> {
  id: string;
  label: string;
  value: V;
  onChange: (v: V) => void;
}

/** The name of a target, agent or probe (required; `error`: a duplicate or bad name). */
export function NameField(p: FieldProps<string> & { error?: string }) {
  return (
    <InlineField label="Name" labelWidth={LABEL_WIDTH} invalid={Boolean(p.error)} error={p.error} required>
      <Input
        id={p.id}
        aria-label={p.label}
        width={40}
        value={p.value}
        onChange={(e) => p.onChange(e.currentTarget.value)}
      />
    </InlineField>
  );
}

/** The metrics page URL of a target, agent or probe; `error` is shown once something is typed. */
export function MetricsURLField(
  p: FieldProps<string> & { error?: string; required: boolean; placeholder: string; tooltip?: string }
) {
  const error = p.value !== '' ? p.error : undefined;
  return (
    <InlineField
      label="Metrics URL"
      labelWidth={LABEL_WIDTH}
      required={p.required}
      invalid={Boolean(error)}
      error={error}
      tooltip={p.tooltip}
    >
      <Input
        id={p.id}
        aria-label={p.label}
        width={60}
        value={p.value}
        placeholder={p.placeholder}
        onChange={(e) => p.onChange(e.currentTarget.value)}
      />
    </InlineField>
  );
}

/** A labelled switch: skip TLS verification of a scraped page. */
export function TLSSwitch({ id, label, value, onChange }: Omit<FieldProps<boolean>, 'value'> & { value?: boolean }) {
  return (
    <InlineField label="Skip TLS verify" labelWidth={LABEL_WIDTH}>
      <Switch id={id} aria-label={label} value={Boolean(value)} onChange={(e) => onChange(e.currentTarget.checked)} />
    </InlineField>
  );
}

/** A price (a number ≥ 0, any precision); empty: none, passed as undefined. */
export function PriceInput({ id, label, value, onChange }: FieldProps<number | undefined>) {
  return (
    <Input
      id={id}
      aria-label={label}
      type="number"
      min={0}
      step="any"
      width={20}
      value={value ?? ''}
      placeholder="none"
      onChange={(e) => {
        const v = e.currentTarget.value.trim();
        onChange(v === '' ? undefined : Number(v));
      }}
    />
  );
}

/** A destructive "Remove <noun>" button of an item's card. */
export function RemoveButton({ noun, n, onClick }: { noun: string; n: number; onClick: () => void }) {
  return (
    <Button
      variant="destructive"
      fill="outline"
      size="sm"
      icon="trash-alt"
      aria-label={`Remove ${noun} ${n}`}
      onClick={onClick}
    >
      {`Remove ${noun}`}
    </Button>
  );
}
