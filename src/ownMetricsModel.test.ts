import { Settings } from './configModel';
import { firstOwnMetricsError, ownMetricsErrors, setOwnMetric } from './ownMetricsModel';
import { TargetConfig } from './types';

const svc = (patch: Partial<TargetConfig>): TargetConfig => ({ name: 'svc', url: 'http://a/m', ...patch });

describe('ownMetricsErrors: the sentences settings.Load gives (pkg/settings checkUserMetrics)', () => {
  // Each expected sentence is what settings.Load answered for the same target.
  const cases: Array<[Partial<TargetConfig>, boolean, string]> = [
    [
      { metrics: { ttft: 'llm_ttft_seconds_sum' } },
      false,
      `targets[0].metrics.ttft: "llm_ttft_seconds_sum": give the histogram's base name, without _sum`,
    ],
    [{ metrics: { ttft: '' } }, false, 'targets[0].metrics.ttft: "" is not a metric name'],
    [{ metrics: { ttft: 'x', tpot: 'x' } }, false, 'targets[0].metrics.ttft: "x" is already mapped to tpot'],
    [
      { engine: 'vllm', metrics: { ttft: 'x' } },
      false,
      'targets[0].metrics: a target with its own metrics map is read as engine "custom"; leave targets[0].engine empty',
    ],
    [{ modelLabel: '__m', metrics: { ttft: 'x' } }, false, 'targets[0].modelLabel: "__m" is not a usable label name'],
    [
      { modelLabel: 'model' },
      false,
      "targets[0].modelLabel: set only with targets[0].metrics (an engine's own pages name their model themselves)",
    ],
    [
      { metrics: { latency: 'x' } },
      false,
      'targets[0].metrics: "latency" is not a signal that can be mapped (one of decode_time, e2e, generation_tokens, inference_time, itl, prefill_time, prompt_tokens, queue_time, requests_finished, requests_running, requests_waiting, tpot, ttft)',
    ],
    [
      { metrics: { ttft: 'x' } },
      true,
      "targets[0].metrics: mapping your own metrics to signals works in embedded mode only (the collector renames them while scraping); in remote mode, record them under an engine's names with Prometheus recording rules",
    ],
  ];
  it.each(cases)('%j (remote %s)', (patch, remote, want) => {
    expect(firstOwnMetricsError(ownMetricsErrors(0, svc(patch), remote))).toBe(want);
  });

  it('accepts the mapping of the issue (histograms by base name, a counter, modelLabel model)', () => {
    const t = svc({
      modelLabel: 'model',
      metrics: {
        ttft: 'llm_ttft_seconds',
        tpot: 'llm_tpot_seconds',
        queue_time: 'llm_queue_seconds',
        prompt_tokens: 'llm_prompt_tokens_total',
      },
    });
    expect(firstOwnMetricsError(ownMetricsErrors(0, t, false))).toBeUndefined();
  });
});

describe('setOwnMetric', () => {
  const options = (t: TargetConfig) => ({ jsonData: { targets: [t] }, secureJsonFields: {} }) as unknown as Settings;

  it('adds, renames a row in place and removes; the last removal drops modelLabel', () => {
    let o = options(svc({}));
    o = setOwnMetric(o, 0, 'ttft', 'llm_ttft_seconds');
    o = setOwnMetric(o, 0, 'tpot', '');
    o = setOwnMetric(o, 0, 'e2e', '', 'tpot');
    expect(o.jsonData.targets?.[0].metrics).toEqual({ ttft: 'llm_ttft_seconds', e2e: '' });
    expect(Object.keys(o.jsonData.targets?.[0].metrics ?? {})).toEqual(['ttft', 'e2e']);
    o = { ...o, jsonData: { ...o.jsonData, targets: [{ ...o.jsonData.targets![0], modelLabel: 'model' }] } };
    o = setOwnMetric(o, 0, 'e2e', undefined);
    o = setOwnMetric(o, 0, 'ttft', undefined);
    expect(o.jsonData.targets?.[0]).toEqual({ name: 'svc', url: 'http://a/m' });
  });
});
