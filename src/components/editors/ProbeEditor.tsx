import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, Input, Stack } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { PROBE_SIGNALS, PROBE_VIEWS, ProbeSignal, ProbeView } from '../../types';
import { LW, Radio, withField } from './common';

const VIEW_OPTIONS: Array<SelectableValue<ProbeView>> = PROBE_VIEWS.map((v) => ({ label: v, value: v }));
const SIGNAL_OPTIONS: Array<SelectableValue<ProbeSignal>> = PROBE_SIGNALS.map((v) => ({ label: v, value: v }));

/** A number typed in a text input: undefined when empty or not a number. */
function parseNumber(s: string): number | undefined {
  const v = Number(s);
  return s.trim() === '' || !Number.isFinite(v) ? undefined : v;
}

/**
 * Editor of the probe query type: the view (jitter, errors, spikes) and, for
 * spikes, the per-request signal, its threshold (a bucket bound of the probe,
 * checked by the backend) and the share of requests that makes a window a
 * sustained breach.
 */
export function ProbeEditor({ query, onChange }: QueryTypeEditorProps<'probe'>) {
  const view = query.view ?? 'jitter';
  return (
    <Stack gap={0.5} wrap="wrap">
      <Radio
        label="View"
        tooltip="jitter per request, errors by class, or spike vs sustained windows"
        options={VIEW_OPTIONS}
        value={view}
        onChange={(v) => onChange(withField(query, 'view', v))}
      />
      {view === 'spikes' && (
        <>
          <Radio
            label="Signal"
            tooltip="The per-request value compared with the threshold"
            options={SIGNAL_OPTIONS}
            value={query.signal ?? 'max_gap'}
            onChange={(v) => onChange(withField(query, 'signal', v))}
          />
          <InlineField
            label="Threshold (s)"
            labelWidth={LW}
            tooltip="One of the probe's bucket bounds, e.g. 0.1, 0.25, 0.5, 1"
          >
            <Input
              aria-label="Threshold"
              width={10}
              defaultValue={query.threshold}
              onBlur={(e) => onChange(withField(query, 'threshold', parseNumber(e.currentTarget.value)))}
            />
          </InlineField>
          <InlineField
            label="Sustained share"
            labelWidth={LW + 4}
            tooltip="Share (0..1) of a window's requests above the threshold that makes it a sustained breach; default 0.5"
          >
            <Input
              aria-label="Sustained share"
              width={8}
              defaultValue={query.sustainedShare}
              onBlur={(e) => onChange(withField(query, 'sustainedShare', parseNumber(e.currentTarget.value)))}
            />
          </InlineField>
        </>
      )}
    </Stack>
  );
}
