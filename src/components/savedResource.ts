import { useEffect, useState } from 'react';
import { getBackendSrv } from '@grafana/runtime';

import { Settings } from '../configModel';

/**
 * Whether the data source has been saved at least once (its resources answer for the saved
 * settings only: a target typed since is unknown to them).
 */
export function isSaved(o: Settings): boolean {
  return Boolean(o.uid) && o.version !== undefined && o.version > 1;
}

/** The sentence of a failed resource call: the backend's `error`, else Grafana's message. */
export function resourceError(e: unknown): string {
  const err = e as { data?: { error?: string; message?: string }; message?: string };
  return err?.data?.error ?? err?.data?.message ?? err?.message ?? String(e);
}

/** GET /api/datasources/uid/<uid>/resources/<path> of the saved data source. */
export function getSavedResource<T>(o: Settings, path: string, params?: Record<string, string>): Promise<T> {
  return getBackendSrv().get<T>(`/api/datasources/uid/${o.uid}/resources/${path}`, params);
}

/**
 * A list resource of the saved data source (GET /models: the model names stored in the last
 * hour), read once when the editor opens; empty before the first save or when the call fails.
 */
export function useSavedList(o: Settings, path: 'models' | 'targets'): string[] {
  const [names, setNames] = useState<string[]>([]);
  const saved = isSaved(o);
  const uid = o.uid;
  useEffect(() => {
    if (!saved) {
      return;
    }
    let live = true;
    getBackendSrv()
      .get<unknown>(`/api/datasources/uid/${uid}/resources/${path}`)
      .then((body) => {
        if (live && Array.isArray(body)) {
          setNames(body.filter((n): n is string => typeof n === 'string'));
        }
      })
      .catch(() => undefined); // the pickers still take typed names
    return () => {
      live = false;
    };
  }, [saved, uid, path]);
  return names;
}
