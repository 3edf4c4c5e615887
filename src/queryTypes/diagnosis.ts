import { DiagnosisEditor } from '../components/editors/DiagnosisEditor';
import { DIAGNOSIS_FORMATS } from '../types';
import { defineQueryType } from './definition';

export const diagnosisType = defineQueryType({
  id: 'diagnosis',
  label: 'Diagnosis',
  description:
    'Bottleneck per target (stall, queue, KV cache, prefill, decode, throttling, …) with evidence and vLLM flags',
  defaults: { format: 'table' },
  shared: { targets: true, models: true, groupBy: false, window: true },
  fields: {
    format: { owned: true, enum: DIAGNOSIS_FORMATS },
    // Set by alert rules and provisioned queries, not by the editor; kept when the type changes.
    classes: { owned: false },
  },
  editor: DiagnosisEditor,
});
