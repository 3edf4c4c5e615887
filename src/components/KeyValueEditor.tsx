import React, { useState } from 'react';
import { Button, IconButton, Input, Stack } from '@grafana/ui';

interface Props {
  /** Accessible name prefix, e.g. "Target 1 label" or "Matcher". */
  name: string;
  value: Record<string, string> | undefined;
  onChange: (value: Record<string, string>) => void;
  keyPlaceholder?: string;
  valuePlaceholder?: string;
  addLabel?: string;
}

type Row = { key: string; value: string };

function toRows(v: Record<string, string> | undefined): Row[] {
  return Object.entries(v ?? {}).map(([key, value]) => ({ key, value }));
}

function toRecord(rows: Row[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of rows) {
    const k = r.key.trim();
    if (k !== '') {
      out[k] = r.value;
    }
  }
  return out;
}

/**
 * Editable key/value rows. Rows are kept locally so a half-typed or empty
 * key does not disappear; the parent receives only rows with a key.
 */
export function KeyValueEditor({ name, value, onChange, keyPlaceholder, valuePlaceholder, addLabel }: Props) {
  const [rows, setRows] = useState<Row[]>(() => toRows(value));

  const update = (next: Row[]) => {
    setRows(next);
    onChange(toRecord(next));
  };

  return (
    <Stack direction="column" gap={0.5}>
      {rows.map((row, i) => (
        <Stack key={i} gap={0.5} alignItems="center">
          <Input
            aria-label={`${name} ${i + 1} key`}
            width={20}
            value={row.key}
            placeholder={keyPlaceholder ?? 'key'}
            onChange={(e) => update(rows.map((r, j) => (j === i ? { ...r, key: e.currentTarget.value } : r)))}
          />
          <Input
            aria-label={`${name} ${i + 1} value`}
            width={28}
            value={row.value}
            placeholder={valuePlaceholder ?? 'value'}
            onChange={(e) => update(rows.map((r, j) => (j === i ? { ...r, value: e.currentTarget.value } : r)))}
          />
          <IconButton
            name="trash-alt"
            aria-label={`Remove ${name.toLowerCase()} ${i + 1}`}
            onClick={() => update(rows.filter((_, j) => j !== i))}
          />
        </Stack>
      ))}
      <div>
        <Button
          size="sm"
          variant="secondary"
          icon="plus"
          fill="text"
          onClick={() => update([...rows, { key: '', value: '' }])}
        >
          {addLabel ?? `Add ${name.toLowerCase()}`}
        </Button>
      </div>
    </Stack>
  );
}
