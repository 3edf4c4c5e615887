import React from 'react';
import { SelectableValue } from '@grafana/data';
import { Stack } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { GPU_SIGNALS } from '../../types';
import { useResourceOptions, variableOptions } from '../useResourceOptions';
import { Multi, withField } from './common';

const GPU_SIGNAL_OPTIONS: Array<SelectableValue<string>> = GPU_SIGNALS.map((s) => ({ label: s, value: s }));

/** Editor of the gpu query type: agents (GET /agents), GPU indices (GET /gpus) and signals. */
export function GpuEditor({ query, onChange, datasource }: QueryTypeEditorProps<'gpu'>) {
  const agents = useResourceOptions(datasource, 'agents');
  const gpus = useResourceOptions(datasource, 'gpus');
  return (
    <Stack gap={0.5} wrap="wrap">
      <Multi
        label="Agents"
        id="inferscope-agents"
        tooltip="GPU agent names; empty means all agents"
        value={query.agents}
        {...agents}
        onChange={(v) => onChange(withField(query, 'agents', v))}
      />
      <Multi
        label="GPUs"
        id="inferscope-gpus"
        tooltip="GPU indices; empty means all GPUs"
        value={query.gpus}
        {...gpus}
        width={24}
        onChange={(v) => onChange(withField(query, 'gpus', v))}
      />
      <Multi
        label="Signals"
        id="inferscope-signals"
        tooltip="Canonical GPU signals; throttle_reasons comes as a state timeline"
        placeholder="choose signals"
        value={query.signals}
        options={[...GPU_SIGNAL_OPTIONS, ...variableOptions()]}
        onChange={(v) => onChange(withField(query, 'signals', v))}
      />
    </Stack>
  );
}
