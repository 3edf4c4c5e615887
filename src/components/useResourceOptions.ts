import { useCallback, useEffect, useState } from 'react';
import { SelectableValue } from '@grafana/data';
import { getTemplateSrv } from '@grafana/runtime';

import { EditorDataSource, VariableKind } from '../types';

/** Dashboard variables offered as "$name" options; none outside a dashboard. */
export function variableOptions(): Array<SelectableValue<string>> {
  try {
    return getTemplateSrv()
      .getVariables()
      .map((v) => ({ label: `$${v.name}`, value: `$${v.name}`, description: 'Dashboard variable' }));
  } catch {
    return [];
  }
}

/** The message of a failed call (an Error's message, else the value as text). */
export function errorText(e: unknown): string {
  return e && typeof e === 'object' && 'message' in e ? String((e as Error).message) : String(e);
}

/**
 * What `load` resolves to, read again whenever `load` changes (callers wrap it in useCallback
 * over what it reads): `loading` until the current load's answer lands (the previous value is
 * kept meanwhile), `error` the failed call's message. Nothing is read while `enabled` is false.
 */
export function useLoaded<T>(load: () => Promise<T>, enabled = true): { value?: T; loading: boolean; error?: string } {
  const [answer, setAnswer] = useState<{ load: () => Promise<T>; value?: T; error?: string } | undefined>();
  useEffect(() => {
    if (!enabled) {
      return;
    }
    let live = true;
    load()
      .then((value) => live && setAnswer({ load, value }))
      .catch((e: unknown) => live && setAnswer({ load, error: errorText(e) }));
    return () => {
      live = false;
    };
  }, [load, enabled]);
  const current = answer?.load === load ? answer : undefined;
  return { value: current ? current.value : answer?.value, loading: enabled && !current, error: current?.error };
}

/**
 * Options of a multi-select filled from GET /<kind>, plus dashboard
 * variables. `error` holds the message when the resource call failed.
 */
export function useResourceOptions(
  datasource: EditorDataSource,
  kind: VariableKind,
  enabled = true
): { options: Array<SelectableValue<string>>; loading: boolean; error?: string } {
  const load = useCallback(() => datasource.listResource(kind), [datasource, kind]);
  const { value, loading, error } = useLoaded(load, enabled);
  const options = (value ?? []).map((v) => ({ label: v.text, value: String(v.value ?? v.text) }));
  return {
    options: [...options, ...variableOptions()],
    loading,
    error: error === undefined ? undefined : `Could not list ${kind}: ${error}`,
  };
}
