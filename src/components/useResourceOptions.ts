import { useEffect, useState } from 'react';
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

/**
 * Options of a multi-select filled from GET /<kind>, plus dashboard
 * variables. `error` holds the message when the resource call failed.
 */
export function useResourceOptions(
  datasource: EditorDataSource,
  kind: VariableKind,
  enabled = true
): { options: Array<SelectableValue<string>>; loading: boolean; error?: string } {
  const [state, setState] = useState<{ options: Array<SelectableValue<string>>; loading: boolean; error?: string }>({
    options: [],
    loading: enabled,
  });

  useEffect(() => {
    if (!enabled) {
      return;
    }
    let live = true;
    datasource
      .listResource(kind)
      .then((values) => {
        if (live) {
          setState({
            options: values.map((v) => ({ label: v.text, value: String(v.value ?? v.text) })),
            loading: false,
          });
        }
      })
      .catch((e: unknown) => {
        if (live) {
          const msg = e && typeof e === 'object' && 'message' in e ? String((e as Error).message) : String(e);
          setState({ options: [], loading: false, error: `Could not list ${kind}: ${msg}` });
        }
      });
    return () => {
      live = false;
    };
  }, [datasource, kind, enabled]);

  return { ...state, options: [...state.options, ...variableOptions()] };
}
