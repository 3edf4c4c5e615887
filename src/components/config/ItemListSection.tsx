import React, { ReactNode } from 'react';
import { Box, Button, Stack, Text } from '@grafana/ui';
import { ConfigSection } from '@grafana/plugin-ui';

interface ItemListSectionProps<T> {
  title: string;
  description: string;
  items: T[];
  /** The items' kind in ids (`target`: data-testid target-0, target-1, …). */
  kind: string;
  addLabel: string;
  onAdd: () => void;
  /** One item's card content. */
  children: (item: T, i: number) => ReactNode;
}

/**
 * A settings section listing items (targets, GPU agents, probes), each in a bordered box,
 * with an add button below. A box is remounted when the list changes length, so the local
 * state of its editors (label rows, GPU text) never follows the wrong item.
 */
export function ItemListSection<T>({
  title,
  description,
  items,
  kind,
  addLabel,
  onAdd,
  children,
}: ItemListSectionProps<T>) {
  return (
    <ConfigSection title={title}>
      <Text color="secondary" element="p">
        {description}
      </Text>
      <Stack direction="column" gap={2}>
        {items.map((item, i) => (
          <Box
            key={`${kind}-${items.length}-${i}`}
            borderStyle="solid"
            borderColor="weak"
            padding={1.5}
            data-testid={`${kind}-${i}`}
          >
            {children(item, i)}
          </Box>
        ))}
        <div>
          <Button icon="plus" variant="secondary" onClick={onAdd}>
            {addLabel}
          </Button>
        </div>
      </Stack>
    </ConfigSection>
  );
}
