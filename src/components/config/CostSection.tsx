import React from 'react';
import { InlineField, Input } from '@grafana/ui';
import { ConfigSection } from '@grafana/plugin-ui';

import { setOption } from '../../configModel';
import { LABEL_WIDTH, PriceInput, SectionProps } from './fields';

/** The Cost section: the currency of every price and the energy price (per-target and per-agent prices are on their cards). */
export function CostSection({ options, onOptionsChange }: SectionProps) {
  return (
    <ConfigSection
      title="Cost"
      description="Prices for the cost query and the Cost & capacity dashboard: per target (cost per hour) or per GPU agent (cost per GPU-hour) above, the currency and the energy price here"
    >
      <InlineField label="Currency" labelWidth={LABEL_WIDTH} tooltip="ISO 4217 code of every price (USD, EUR, …)">
        <Input
          id="currency"
          aria-label="Currency"
          width={20}
          value={options.jsonData.currency ?? ''}
          placeholder="USD"
          onChange={(e) => onOptionsChange(setOption(options, 'currency', e.currentTarget.value.trim().toUpperCase()))}
        />
      </InlineField>
      <InlineField
        label="Energy price per kWh"
        labelWidth={LABEL_WIDTH}
        tooltip="Adds the GPUs' measured energy (energy counter, else power × time) to each priced target's cost"
      >
        <PriceInput
          id="energy-price"
          label="Energy price per kWh"
          value={options.jsonData.energyPricePerKWh}
          onChange={(v) => onOptionsChange(setOption(options, 'energyPricePerKWh', v))}
        />
      </InlineField>
    </ConfigSection>
  );
}
