import React, { useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, Input, RadioButtonGroup } from '@grafana/ui';

import { isSecretConfigured, resetSecret, Settings, updateTarget } from '../../configModel';
import { secretKey, SecretKind, TargetConfig } from '../../types';
import { LABEL_WIDTH, SectionProps } from './fields';
import { SecretField } from './secrets';

type AuthMethod = 'none' | 'basic' | 'bearer';

const AUTH_OPTIONS: Array<SelectableValue<AuthMethod>> = [
  { label: 'No auth', value: 'none' },
  { label: 'Basic auth', value: 'basic' },
  { label: 'Bearer token', value: 'bearer' },
];

/** Whether the target called `name` has a secret of `kind`, saved or typed. */
function hasSecret(o: Settings, name: string, kind: SecretKind): boolean {
  return isSecretConfigured(o, name, kind) || Boolean(o.secureJsonData?.[secretKey(name, kind)]);
}

/** The method a target's saved or typed settings use (basic auth wins, as in pkg/collect). */
function authMethodOf(o: Settings, t: TargetConfig): AuthMethod {
  if (t.basicAuthUser || hasSecret(o, t.name, 'basicAuthPassword')) {
    return 'basic';
  }
  return hasSecret(o, t.name, 'bearerToken') ? 'bearer' : 'none';
}

interface Props extends SectionProps {
  /** The target's index and its number in words (index + 1). */
  i: number;
  n: number;
  target: TargetConfig;
}

/**
 * A target's authentication: a picker (no auth, basic auth, bearer token) and the fields of
 * the chosen method only. Picking a method clears the other method's user and secrets, so
 * what is saved is what is shown.
 */
export function TargetAuth({ i, n, target: t, options, onOptionsChange }: Props) {
  const [method, setMethod] = useState<AuthMethod>(() => authMethodOf(options, t));
  const pick = (m: AuthMethod) => {
    setMethod(m);
    let o = options;
    if (m !== 'basic') {
      if (t.basicAuthUser) {
        o = updateTarget(o, i, { basicAuthUser: undefined });
      }
      if (hasSecret(o, t.name, 'basicAuthPassword')) {
        o = resetSecret(o, t.name, 'basicAuthPassword');
      }
    }
    if (m !== 'bearer' && hasSecret(o, t.name, 'bearerToken')) {
      o = resetSecret(o, t.name, 'bearerToken');
    }
    if (o !== options) {
      onOptionsChange(o);
    }
  };
  return (
    <>
      <InlineField label="Authentication" labelWidth={LABEL_WIDTH} tooltip="How the metrics page is fetched">
        <RadioButtonGroup
          aria-label={`Target ${n} authentication`}
          options={AUTH_OPTIONS}
          value={method}
          onChange={pick}
        />
      </InlineField>
      {method === 'basic' && (
        <>
          <InlineField label="Basic auth user" labelWidth={LABEL_WIDTH}>
            <Input
              id={`target-${i}-user`}
              aria-label={`Target ${n} basic auth user`}
              width={40}
              value={t.basicAuthUser ?? ''}
              onChange={(e) => onOptionsChange(updateTarget(options, i, { basicAuthUser: e.currentTarget.value }))}
            />
          </InlineField>
          <SecretField
            id={`target-${i}-password`}
            label={`Target ${n} basic auth password`}
            options={options}
            name={t.name}
            kind="basicAuthPassword"
            onOptionsChange={onOptionsChange}
            tooltip="Stored encrypted; only the backend reads it"
          />
        </>
      )}
      {method === 'bearer' && (
        <SecretField
          id={`target-${i}-token`}
          label={`Target ${n} bearer token`}
          options={options}
          name={t.name}
          kind="bearerToken"
          onOptionsChange={onOptionsChange}
          tooltip="Stored encrypted; only the backend reads it"
        />
      )}
    </>
  );
}
