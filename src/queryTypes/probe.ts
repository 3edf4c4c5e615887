import { ProbeEditor } from '../components/editors/ProbeEditor';
import { defineQueryType } from './definition';

export const probeType = defineQueryType({
  id: 'probe',
  label: 'Client probe',
  description:
    'What the client-side probes measured: inter-token jitter, errors by class, spikes vs sustained breaches',
  defaults: { view: 'jitter' },
  shared: { targets: true, models: true, groupBy: false, window: true },
  fields: {
    view: { owned: true },
    signal: { owned: true },
    threshold: { owned: true },
    sustainedShare: { owned: true },
  },
  editor: ProbeEditor,
});
