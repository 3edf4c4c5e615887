import React from 'react';
import { InlineField, Input } from '@grafana/ui';
import { ConfigSection } from '@grafana/plugin-ui';

import { durationError, setOption } from '../../configModel';
import { SETTINGS_DEFAULTS } from '../../types';
import { isRemote } from '../RemoteSettings';
import { LABEL_WIDTH, SectionProps } from './fields';

/** The text settings of the Collection section: durations and sizes in Prometheus notation, the storage path. */
const DURATION_FIELDS: Array<{
  key: 'scrapeInterval' | 'scrapeTimeout' | 'retention' | 'retentionSize' | 'storagePath';
  id: string;
  label: string;
  tooltip: string;
}> = [
  {
    key: 'scrapeInterval',
    id: 'scrape-interval',
    label: 'Scrape interval',
    tooltip: 'How often every target and agent is scraped',
  },
  { key: 'scrapeTimeout', id: 'scrape-timeout', label: 'Scrape timeout', tooltip: 'At most the scrape interval' },
  {
    key: 'retention',
    id: 'retention',
    label: 'Retention',
    tooltip: 'How long scraped series are kept on disk (at most 90d)',
  },
  {
    key: 'retentionSize',
    id: 'retention-size',
    label: 'Retention size',
    tooltip: 'Disk budget of this data source (e.g. 512MB, 10GB; 0 = none): the oldest data goes first',
  },
  {
    key: 'storagePath',
    id: 'storage-path',
    label: 'Storage path',
    tooltip:
      "Absolute directory on the Grafana server; history is kept in <path>/<data source uid>. Empty: Grafana's data directory + /inferscope",
  },
];

/** The Collection fields holding a Prometheus duration (checked as typed). */
function isDurationKey(k: string): k is 'scrapeInterval' | 'scrapeTimeout' | 'retention' {
  return k === 'scrapeInterval' || k === 'scrapeTimeout' || k === 'retention';
}

/** The numeric limits of the Collection section. */
const LIMIT_FIELDS: Array<{
  key: 'bodySizeLimit' | 'sampleLimit';
  id: string;
  label: string;
  ariaLabel: string;
  tooltip: string;
}> = [
  {
    key: 'bodySizeLimit',
    id: 'body-size-limit',
    label: 'Body size limit (bytes)',
    ariaLabel: 'Body size limit',
    tooltip: 'Largest metrics page accepted',
  },
  {
    key: 'sampleLimit',
    id: 'sample-limit',
    label: 'Sample limit',
    ariaLabel: 'Sample limit',
    tooltip: 'Most samples kept from one scrape after unused families are dropped; a larger page fails that scrape',
  },
];

/**
 * The Collection section: scrape interval, and in embedded mode the scrape timeout, retention,
 * storage and the limits of one scrape (in remote mode the server scrapes and stores).
 */
export function CollectionSection({ options, onOptionsChange }: SectionProps) {
  const remote = isRemote(options);
  const numberOption = (key: 'bodySizeLimit' | 'sampleLimit', raw: string) => {
    const t = raw.trim();
    onOptionsChange(setOption(options, key, t === '' ? undefined : Number(t)));
  };
  return (
    <ConfigSection title="Collection">
      {DURATION_FIELDS.filter((f) => !remote || f.key === 'scrapeInterval').map((f) => {
        const error = isDurationKey(f.key) ? durationError(f.key, options.jsonData[f.key] ?? '') : undefined;
        return (
          <InlineField
            key={f.key}
            label={f.label}
            labelWidth={LABEL_WIDTH}
            tooltip={f.tooltip}
            invalid={Boolean(error)}
            error={error}
          >
            <Input
              id={f.id}
              aria-label={f.label}
              width={20}
              value={options.jsonData[f.key] ?? ''}
              placeholder={SETTINGS_DEFAULTS[f.key]}
              onChange={(e) => onOptionsChange(setOption(options, f.key, e.currentTarget.value.trim()))}
            />
          </InlineField>
        );
      })}
      {(remote ? [] : LIMIT_FIELDS).map((f) => (
        <InlineField key={f.key} label={f.label} labelWidth={LABEL_WIDTH} tooltip={f.tooltip}>
          <Input
            id={f.id}
            aria-label={f.ariaLabel}
            type="number"
            min={1}
            width={20}
            value={options.jsonData[f.key] ?? ''}
            placeholder={String(SETTINGS_DEFAULTS[f.key])}
            onChange={(e) => numberOption(f.key, e.currentTarget.value)}
          />
        </InlineField>
      ))}
    </ConfigSection>
  );
}
