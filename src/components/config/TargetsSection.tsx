import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField } from '@grafana/ui';
import { ConfigSubSection } from '@grafana/plugin-ui';

import { addTarget, nameError, removeTarget, updateTarget, urlError } from '../../configModel';
import { ENGINES, TargetConfig } from '../../types';
import { Single } from '../editors/common';
import { KeyValueEditor } from '../KeyValueEditor';
import { OwnMetricsEditor } from '../OwnMetricsEditor';
import { isRemote, SelectorField } from '../RemoteSettings';
import { GPUListInput } from './GPUListInput';
import { ItemListSection } from './ItemListSection';
import { LABEL_WIDTH, MetricsURLField, NameField, PriceInput, RemoveButton, SectionProps, TLSSwitch } from './fields';
import { TargetAuth } from './TargetAuth';

const ENGINE_OPTIONS: Array<SelectableValue<string>> = [
  { label: 'auto (detect)', value: '', description: 'Detect the engine from the metric families on the page' },
  ...ENGINES.map((e) => ({ label: e, value: e })),
];

/** With more targets than this, saved targets start collapsed (a new one stays open). */
const COLLAPSE_ABOVE = 5;

/** The Targets section: one collapsible card per scraped inference server, and Add target. */
export function TargetsSection({ options, onOptionsChange }: SectionProps) {
  const targets = options.jsonData.targets ?? [];
  return (
    <ItemListSection
      title="Targets"
      description="Inference servers whose Prometheus /metrics page is scraped. The name becomes the job label of every series and is what queries select by."
      items={targets}
      kind="target"
      addLabel="Add target"
      onAdd={() => onOptionsChange(addTarget(options))}
    >
      {(t, i) => (
        <ConfigSubSection
          title={`Target ${i + 1}: ${t.name || 'unnamed'}${t.url ? ` (${t.url})` : ''}`}
          isCollapsible
          isInitiallyOpen={targets.length <= COLLAPSE_ABOVE || (i === targets.length - 1 && !t.url)}
        >
          <TargetFields i={i} target={t} options={options} onOptionsChange={onOptionsChange} />
        </ConfigSubSection>
      )}
    </ItemListSection>
  );
}

/** The fields of target i: name, selector (remote), URL, engine, labels, own metrics, auth, price, GPUs. */
function TargetFields({ i, target: t, options, onOptionsChange }: SectionProps & { i: number; target: TargetConfig }) {
  const remote = isRemote(options);
  const n = i + 1;
  const update = (patch: Partial<TargetConfig>) => onOptionsChange(updateTarget(options, i, patch));
  const agentOptions: Array<SelectableValue<string>> = [
    { label: 'none', value: '' },
    ...(options.jsonData.gpuAgents ?? []).map((a) => ({ label: a.name, value: a.name })),
  ];
  return (
    <>
      <NameField
        id={`target-${i}-name`}
        label={`Target ${n} name`}
        value={t.name}
        error={nameError(options, t.name)}
        onChange={(name) => update({ name })}
      />
      {remote ? (
        <SelectorField
          id={`target-${i}-selector`}
          label={`Target ${n} selector`}
          name={t.name}
          value={t.selector}
          onChange={(selector) => update({ selector })}
        />
      ) : null}
      <MetricsURLField
        id={`target-${i}-url`}
        label={`Target ${n} URL`}
        value={t.url}
        error={urlError(`targets[${i}].url`, t.url, remote)}
        required={!remote}
        placeholder="http://10.0.0.5:8000/metrics"
        tooltip={remote ? 'Optional in remote mode: shown in the targets table only' : 'URL of the metrics page'}
        onChange={(url) => update({ url })}
      />
      <InlineField label="Engine" labelWidth={LABEL_WIDTH} tooltip="Override engine detection">
        <Single
          id={`target-${i}-engine`}
          ariaLabel={`Target ${n} engine`}
          width={40}
          options={ENGINE_OPTIONS}
          value={t.engine ?? ''}
          onChange={(engine) => update({ engine })}
        />
      </InlineField>
      <InlineField
        label="Extra labels"
        labelWidth={LABEL_WIDTH}
        tooltip="Added to every series scraped from this target (not job or instance)"
      >
        <KeyValueEditor
          name={`Target ${n} label`}
          addLabel="Add label"
          value={t.labels}
          keyPlaceholder="cluster"
          valuePlaceholder="eu-1"
          onChange={(labels) => update({ labels })}
        />
      </InlineField>
      <OwnMetricsEditor i={i} target={t} remote={remote} options={options} onOptionsChange={onOptionsChange} />
      {remote ? null : (
        <>
          <TargetAuth i={i} n={n} target={t} options={options} onOptionsChange={onOptionsChange} />
          <TLSSwitch
            id={`target-${i}-tls`}
            label={`Target ${n} skip TLS verify`}
            value={t.tlsSkipVerify}
            onChange={(tlsSkipVerify) => update({ tlsSkipVerify })}
          />
        </>
      )}
      <InlineField
        label="Cost per hour"
        labelWidth={LABEL_WIDTH}
        tooltip="What the hardware serving this target costs per hour, in the currency below; empty: the GPU agent's price per GPU-hour applies, else no cost"
      >
        <PriceInput
          id={`target-${i}-cost`}
          label={`Target ${n} cost per hour`}
          value={t.costPerHour}
          onChange={(costPerHour) => update({ costPerHour })}
        />
      </InlineField>
      <InlineField label="GPU agent" labelWidth={LABEL_WIDTH} tooltip="GPU agent of the node serving this target">
        <Single
          id={`target-${i}-agent`}
          ariaLabel={`Target ${n} GPU agent`}
          width={40}
          options={agentOptions}
          value={t.agent ?? ''}
          onChange={(agent) => update(agent ? { agent } : { agent: '', gpus: [] })}
        />
      </InlineField>
      {t.agent ? (
        <GPUListInput
          id={`target-${i}-gpus`}
          label={`Target ${n} GPU indices`}
          value={t.gpus}
          onChange={(gpus) => update({ gpus })}
        />
      ) : null}
      <RemoveButton noun="target" n={n} onClick={() => onOptionsChange(removeTarget(options, i))} />
    </>
  );
}
