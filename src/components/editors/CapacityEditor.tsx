import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, Input, Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { CAPACITY_FORMATS, CapacityFormat, CapacityWhatIf } from '../../types';
import { variableOptions } from '../useResourceOptions';
import { LW, Multi, Radio, withField } from './common';

const FORMAT_OPTIONS: Array<SelectableValue<CapacityFormat>> = CAPACITY_FORMATS.map((f) => ({ label: f, value: f }));

/** A number typed in an input: undefined when empty or not a number. */
function num(s: string): number | undefined {
  const v = Number(s.trim());
  return s.trim() === '' || !Number.isFinite(v) ? undefined : v;
}

/** One numeric field of the query, written on blur. */
function NumberField(props: {
  label: string;
  tooltip: string;
  value: number | undefined;
  placeholder: string;
  onChange: (v: number | undefined) => void;
}) {
  return (
    <InlineField label={props.label} labelWidth={LW} tooltip={props.tooltip}>
      <Input
        aria-label={props.label}
        width={10}
        placeholder={props.placeholder}
        defaultValue={props.value === undefined ? '' : String(props.value)}
        onBlur={(e) => props.onChange(num(e.currentTarget.value))}
      />
    </InlineField>
  );
}

/** The what-if changes, one numeric field each (format whatif). */
const WHAT_IF_FIELDS: Array<{ key: keyof CapacityWhatIf; label: string; tooltip: string; placeholder: string }> = [
  {
    key: 'maxNumSeqs',
    label: 'With max_num_seqs',
    tooltip: 'Predict with this --max-num-seqs',
    placeholder: 'unchanged',
  },
  {
    key: 'addReplicas',
    label: 'Add replicas',
    tooltip: 'Spread the load over this many more replicas',
    placeholder: '0',
  },
  {
    key: 'promptScale',
    label: 'Prompts ×',
    tooltip: 'Multiply every prompt length (2: twice as long)',
    placeholder: '1',
  },
  {
    key: 'prefixCachingPercent',
    label: 'Prefix cache %',
    tooltip: 'Prefix caching on, with this share of prompt tokens served from the cache',
    placeholder: 'unchanged',
  },
  {
    key: 'loadScale',
    label: 'Load ×',
    tooltip: 'Multiply the arrival rate on the same replicas (2: twice the load)',
    placeholder: '1',
  },
];

/**
 * Editor of the capacity query type: format, profiles, the utilisation the
 * replicas are sized for, the targets' max_num_seqs and token budget (vLLM
 * exports neither), and with format whatif one change to predict.
 */
export function CapacityEditor({
  query,
  profiles,
  onChange,
}: Pick<QueryTypeEditorProps<'capacity'>, 'query' | 'profiles' | 'onChange'>) {
  const format = (
    (CAPACITY_FORMATS as readonly string[]).includes(query.format ?? '') ? query.format : 'table'
  ) as CapacityFormat;
  const setWhatIf = (key: keyof CapacityWhatIf, v: number | undefined) => {
    const w: CapacityWhatIf = { ...(query.whatIf ?? {}), [key]: v };
    if (v === undefined) {
      delete w[key];
    }
    onChange(withField(query, 'whatIf', Object.keys(w).length > 0 ? w : undefined));
  };
  const profileOptions = (profiles ?? []).map((p) => ({ label: p.name, value: p.name }));
  return (
    <Stack direction="column" gap={0.5}>
      <Stack gap={0.5} wrap="wrap">
        <Radio
          label="Format"
          ariaLabel="Capacity format"
          options={FORMAT_OPTIONS}
          value={format}
          onChange={(v) => {
            const next = { ...query, format: v };
            if (v !== 'whatif') {
              delete next.whatIf;
            }
            onChange(next);
          }}
        />
        <Multi
          label="Profiles"
          id="inferscope-capacity-profiles"
          tooltip="SLO profiles to find knees for; empty: every profile"
          value={query.profiles}
          options={[...profileOptions, ...variableOptions()]}
          onChange={(v) => onChange(withField(query, 'profiles', v))}
        />
      </Stack>
      <Stack gap={0.5} wrap="wrap">
        <NumberField
          label="Utilisation"
          tooltip="Share of its knee each replica is kept at (0 < u ≤ 1)"
          placeholder="0.8"
          value={query.utilisation}
          onChange={(v) => onChange(withField(query, 'utilisation', v))}
        />
        <NumberField
          label="max_num_seqs"
          tooltip="The targets' --max-num-seqs (vLLM does not export it); empty: 256"
          placeholder="256"
          value={query.maxNumSeqs}
          onChange={(v) => onChange(withField(query, 'maxNumSeqs', v))}
        />
        <NumberField
          label="Token budget"
          tooltip="The targets' --max-num-batched-tokens; empty: 8192"
          placeholder="8192"
          value={query.maxNumBatchedTokens}
          onChange={(v) => onChange(withField(query, 'maxNumBatchedTokens', v))}
        />
      </Stack>
      {format === 'whatif' && (
        <Stack gap={0.5} wrap="wrap">
          {WHAT_IF_FIELDS.map(({ key, ...f }) => (
            <NumberField key={key} {...f} value={query.whatIf?.[key]} onChange={(v) => setWhatIf(key, v)} />
          ))}
        </Stack>
      )}
      <Text color="secondary" variant="bodySmall">
        The twin is calibrated on the selected range (at least 30 minutes and 100 finished requests) and cached for 5
        minutes; without a change the what-if table predicts the default set (max_num_seqs halved and doubled, +1
        replica, prompts ×2, prefix caching 50 %).
      </Text>
    </Stack>
  );
}
