import React, { useState } from 'react';
import { InlineField, Input } from '@grafana/ui';

import { parseGPUList } from '../../configModel';
import { FieldProps, LABEL_WIDTH } from './fields';

/** A target's GPU indices on its agent, typed as a comma-separated list (checked as typed). */
export function GPUListInput({ id, label, value, onChange }: FieldProps<number[] | undefined>) {
  const [text, setText] = useState((value ?? []).join(', '));
  const { error } = parseGPUList(text);
  return (
    <InlineField
      label="GPU indices"
      labelWidth={LABEL_WIDTH}
      tooltip="Comma-separated GPU indices on the agent used by this target; empty means all GPUs of the agent"
      invalid={Boolean(error)}
      error={error}
    >
      <Input
        id={id}
        aria-label={label}
        width={20}
        value={text}
        placeholder="all, or 0, 1"
        onChange={(e) => {
          const t = e.currentTarget.value;
          setText(t);
          const parsed = parseGPUList(t);
          if (!parsed.error) {
            onChange(parsed.gpus);
          }
        }}
      />
    </InlineField>
  );
}
