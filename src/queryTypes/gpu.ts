import { GpuEditor } from '../components/editors/GpuEditor';
import { defineQueryType } from './definition';

export const gpuType = defineQueryType({
  id: 'gpu',
  label: 'GPU',
  description: 'Per-GPU signals from the GPU agents (NVML agent or dcgm-exporter)',
  defaults: { signals: ['gpu_util', 'fb_used', 'power', 'saturation'] },
  shared: { targets: false, models: false, groupBy: false, window: false },
  fields: { agents: { owned: true }, gpus: { owned: true }, signals: { owned: true } },
  editor: GpuEditor,
});
