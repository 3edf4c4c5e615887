import React from 'react';
import { Stack, Text } from '@grafana/ui';

import { QueryTypeEditorProps } from '../../queryTypes/definition';
import { ProfilePicker } from './ProfilePicker';

type Props = Pick<QueryTypeEditorProps<'goodput'>, 'query' | 'profiles' | 'onChange'>;

/** Editor of the goodput query type: one profile, all of whose objectives a request must meet. */
export function GoodputEditor({ query, profiles, onChange }: Props) {
  return (
    <Stack direction="column" gap={0.5}>
      <ProfilePicker
        profiles={profiles}
        profile={query.profile}
        allowAll={false}
        onChange={(p) => {
          const next = { ...query, profile: p };
          if (!p) {
            delete next.profile;
          }
          onChange(next);
        }}
      />
      <Text color="secondary" variant="bodySmall">
        Separate histograms only bound the share of requests meeting every objective: the lower and upper series enclose
        the true goodput.
      </Text>
    </Stack>
  );
}
