import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField } from '@grafana/ui';

import { addProbe, nameError, removeProbe, updateProbe, urlError } from '../../configModel';
import { ProbeConfig } from '../../types';
import { Single } from '../editors/common';
import { isRemote } from '../RemoteSettings';
import { ItemListSection } from './ItemListSection';
import { LABEL_WIDTH, MetricsURLField, NameField, SectionProps } from './fields';
import { ScrapedEndpointFields } from './secrets';

/** The Client-side probes section: one card per inferscope-probe endpoint and its target, and Add probe. */
export function ProbesSection({ options, onOptionsChange }: SectionProps) {
  const remote = isRemote(options);
  const targetOptions: Array<SelectableValue<string>> = (options.jsonData.targets ?? []).map((t) => ({
    label: t.name,
    value: t.name,
  }));
  return (
    <ItemListSection
      title="Client-side probes"
      description="inferscope-probe endpoints (docs/probe.md): each sends small streaming requests to the target it exercises and serves TTFT, token jitter and errors as users see them. Names share one namespace with targets and agents."
      items={options.jsonData.probes ?? []}
      kind="probe"
      addLabel="Add probe"
      onAdd={() => onOptionsChange(addProbe(options))}
    >
      {(p, i) => {
        const n = i + 1;
        const update = (patch: Partial<ProbeConfig>) => onOptionsChange(updateProbe(options, i, patch));
        return (
          <>
            <NameField
              id={`probe-${i}-name`}
              label={`Probe ${n} name`}
              value={p.name}
              error={nameError(options, p.name)}
              onChange={(name) => update({ name })}
            />
            <MetricsURLField
              id={`probe-${i}-url`}
              label={`Probe ${n} URL`}
              value={p.url}
              error={urlError(`probes[${i}].url`, p.url, remote)}
              required={!remote}
              placeholder="http://inferscope-probe:9401/metrics"
              onChange={(url) => update({ url })}
            />
            <InlineField
              label="Target"
              labelWidth={LABEL_WIDTH}
              required
              invalid={!p.target}
              error={p.target ? undefined : 'Choose the target this probe exercises'}
              tooltip="The engine target the probe's requests reach: its client-side numbers are joined to this target"
            >
              <Single
                id={`probe-${i}-target`}
                ariaLabel={`Probe ${n} target`}
                width={40}
                placeholder="choose a target"
                options={targetOptions}
                value={p.target || undefined}
                onChange={(target) => update({ target })}
              />
            </InlineField>
            <ScrapedEndpointFields
              idPrefix="probe"
              noun="Probe"
              index={i}
              name={p.name}
              tlsSkipVerify={p.tlsSkipVerify}
              remote={remote}
              options={options}
              onOptionsChange={onOptionsChange}
              onTLS={(tlsSkipVerify) => update({ tlsSkipVerify })}
              onRemove={() => onOptionsChange(removeProbe(options, i))}
            />
          </>
        );
      }}
    </ItemListSection>
  );
}
