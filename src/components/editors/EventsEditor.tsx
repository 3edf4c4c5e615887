import React from 'react';
import { Text } from '@grafana/ui';

/**
 * Editor of the `events` query type: it has no fields of its own beyond the
 * targets. Shown as a hint of what the table holds and how to use it.
 */
export function EventsEditor() {
  return (
    <Text color="secondary" variant="bodySmall">
      Restarts, down periods, counters going backwards and changes of served model, engine or vLLM cache configuration,
      one row per event (time, timeEnd, title, text, tags). Use it as a dashboard annotation.
    </Text>
  );
}
