import React from 'react';
import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { Stack } from '@grafana/ui';
import { DataSourceDescription } from '@grafana/plugin-ui';

import { InferscopeOptions, InferscopeSecureJsonData } from '../types';
import { BaselinesEditor } from './BaselinesEditor';
import { AgentsSection } from './config/AgentsSection';
import { CollectionSection } from './config/CollectionSection';
import { CostSection } from './config/CostSection';
import { ProbesSection } from './config/ProbesSection';
import { TargetsSection } from './config/TargetsSection';
import { RemoteSettings } from './RemoteSettings';
import { SLOProfilesEditor } from './SLOProfilesEditor';

type Props = DataSourcePluginOptionsEditorProps<InferscopeOptions, InferscopeSecureJsonData>;

/**
 * Settings page of the data source (pkg/settings), one component per section: the mode and
 * remote server (RemoteSettings), targets, GPU agents, client-side probes, collection, cost,
 * SLO profiles and baselines (src/components/config/ and the editors beside this file).
 */
export function ConfigEditor({ options, onOptionsChange }: Props) {
  const section = { options, onOptionsChange };
  return (
    <Stack direction="column" gap={2}>
      <DataSourceDescription
        dataSourceName="Inferscope LLM"
        docsLink="https://github.com/inferscope/inferscope-llm-datasource#configuration-data-source-settings"
        hasRequiredFields
      />
      <RemoteSettings {...section} />
      <TargetsSection {...section} />
      <AgentsSection {...section} />
      <ProbesSection {...section} />
      <CollectionSection {...section} />
      <CostSection {...section} />
      <SLOProfilesEditor {...section} />
      <BaselinesEditor {...section} />
    </Stack>
  );
}
