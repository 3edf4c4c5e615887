import React from 'react';
import { InlineField, SecretInput } from '@grafana/ui';

import { isSecretConfigured, resetSecret, setSecret } from '../../configModel';
import { secretKey, SecretKind } from '../../types';
import { LABEL_WIDTH, RemoveButton, SectionProps, TLSSwitch } from './fields';

interface SecretProps extends SectionProps {
  id: string;
  label: string;
  name: string;
  kind: SecretKind;
  tooltip: string;
}

/** A secret of a target or agent called `name` (secureJsonData "<name>.<kind>"), stored encrypted. */
export function SecretField({ id, label, options, name, kind, onOptionsChange, tooltip }: SecretProps) {
  return (
    <InlineField
      label={kind === 'bearerToken' ? 'Bearer token' : 'Basic auth password'}
      labelWidth={LABEL_WIDTH}
      tooltip={tooltip}
    >
      <SecretInput
        id={id}
        aria-label={label}
        width={40}
        isConfigured={isSecretConfigured(options, name, kind)}
        value={options.secureJsonData?.[secretKey(name, kind)] ?? ''}
        placeholder={kind === 'bearerToken' ? 'token sent as Authorization: Bearer' : 'password'}
        onChange={(e) => onOptionsChange(setSecret(options, name, kind, e.currentTarget.value))}
        onReset={() => onOptionsChange(resetSecret(options, name, kind))}
      />
    </InlineField>
  );
}

/**
 * What a GPU agent's and a probe's card share: the bearer token and TLS switch of a scraped
 * page (embedded mode only: in remote mode the server scrapes), and the remove button.
 */
interface ScrapedEndpointProps extends SectionProps {
  /** `agent` or `probe`: the element ids' prefix. */
  idPrefix: string;
  /** `Agent` or `Probe`: the accessible names' prefix. */
  noun: string;
  index: number;
  name: string;
  tlsSkipVerify?: boolean;
  remote: boolean;
  onTLS: (tlsSkipVerify: boolean) => void;
  onRemove: () => void;
}

export function ScrapedEndpointFields(p: ScrapedEndpointProps) {
  const n = p.index + 1;
  return (
    <>
      {p.remote ? null : (
        <>
          <SecretField
            id={`${p.idPrefix}-${p.index}-token`}
            label={`${p.noun} ${n} bearer token`}
            options={p.options}
            name={p.name}
            kind="bearerToken"
            onOptionsChange={p.onOptionsChange}
            tooltip="Stored encrypted; only the backend reads it"
          />
          <TLSSwitch
            id={`${p.idPrefix}-${p.index}-tls`}
            label={`${p.noun} ${n} skip TLS verify`}
            value={p.tlsSkipVerify}
            onChange={p.onTLS}
          />
        </>
      )}
      <RemoveButton noun={p.idPrefix} n={n} onClick={p.onRemove} />
    </>
  );
}
