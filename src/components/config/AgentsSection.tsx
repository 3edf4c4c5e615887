import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField } from '@grafana/ui';

import { addAgent, nameError, removeAgent, updateAgent, urlError } from '../../configModel';
import { AGENT_KINDS, GPUAgentConfig } from '../../types';
import { Single } from '../editors/common';
import { isRemote, SelectorField } from '../RemoteSettings';
import { ItemListSection } from './ItemListSection';
import { LABEL_WIDTH, MetricsURLField, NameField, PriceInput, SectionProps } from './fields';
import { ScrapedEndpointFields } from './secrets';

const KIND_OPTIONS: Array<SelectableValue<string>> = AGENT_KINDS.map((k) => ({
  label: k,
  value: k,
  description: k === 'dcgm' ? 'NVIDIA dcgm-exporter' : 'Inferscope NVML GPU agent',
}));

/** The GPU agents section: one card per node-level GPU metrics endpoint, and Add GPU agent. */
export function AgentsSection({ options, onOptionsChange }: SectionProps) {
  const remote = isRemote(options);
  return (
    <ItemListSection
      title="GPU agents"
      description="Node-level GPU metrics endpoints: the Inferscope NVML agent or NVIDIA dcgm-exporter. Names share one namespace with targets."
      items={options.jsonData.gpuAgents ?? []}
      kind="agent"
      addLabel="Add GPU agent"
      onAdd={() => onOptionsChange(addAgent(options))}
    >
      {(a, i) => {
        const n = i + 1;
        const update = (patch: Partial<GPUAgentConfig>) => onOptionsChange(updateAgent(options, i, patch));
        return (
          <>
            <NameField
              id={`agent-${i}-name`}
              label={`Agent ${n} name`}
              value={a.name}
              error={nameError(options, a.name)}
              onChange={(name) => update({ name })}
            />
            {remote ? (
              <SelectorField
                id={`agent-${i}-selector`}
                label={`Agent ${n} selector`}
                name={a.name}
                value={a.selector}
                onChange={(selector) => update({ selector })}
              />
            ) : null}
            <MetricsURLField
              id={`agent-${i}-url`}
              label={`Agent ${n} URL`}
              value={a.url}
              error={urlError(`gpuAgents[${i}].url`, a.url, remote)}
              required={!remote}
              placeholder="http://10.0.0.5:9400/metrics"
              onChange={(url) => update({ url })}
            />
            <InlineField
              label="Cost per GPU-hour"
              labelWidth={LABEL_WIDTH}
              tooltip="Price of one GPU of this node per hour, applied to the GPUs each target on it uses when the target has no cost per hour"
            >
              <PriceInput
                id={`agent-${i}-cost`}
                label={`Agent ${n} cost per GPU-hour`}
                value={a.costPerGPUHour}
                onChange={(costPerGPUHour) => update({ costPerGPUHour })}
              />
            </InlineField>
            <InlineField label="Kind" labelWidth={LABEL_WIDTH}>
              <Single
                id={`agent-${i}-kind`}
                ariaLabel={`Agent ${n} kind`}
                width={40}
                options={KIND_OPTIONS}
                value={a.kind ?? 'inferscope'}
                onChange={(kind) => update({ kind })}
              />
            </InlineField>
            <ScrapedEndpointFields
              idPrefix="agent"
              noun="Agent"
              index={i}
              name={a.name}
              tlsSkipVerify={a.tlsSkipVerify}
              remote={remote}
              options={options}
              onOptionsChange={onOptionsChange}
              onTLS={(tlsSkipVerify) => update({ tlsSkipVerify })}
              onRemove={() => onOptionsChange(removeAgent(options, i))}
            />
          </>
        );
      }}
    </ItemListSection>
  );
}
