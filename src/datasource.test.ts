import { DataSourceInstanceSettings, PluginType } from '@grafana/data';

import { fakeTemplateSrv } from './test/fakeTemplateSrv';
import { InferscopeOptions, InferscopeQuery } from './types';

let templateSrv = fakeTemplateSrv({});

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getTemplateSrv: () => templateSrv,
}));

// Imported after the mock so the module under test sees it.
import { DataSource, expandList, toMetricFindValues } from './datasource';

const settings = {
  id: 1,
  uid: 'inferscope',
  type: 'inferscope-llm-datasource',
  name: 'Inferscope',
  access: 'proxy',
  readOnly: false,
  jsonData: {},
  meta: {
    id: 'inferscope-llm-datasource',
    name: 'Inferscope LLM',
    type: PluginType.datasource,
    module: '',
    baseUrl: '',
    info: {
      author: { name: 'Inferscope' },
      description: '',
      links: [],
      logos: { small: '', large: '' },
      screenshots: [],
      updated: '',
      version: '',
    },
  },
} as unknown as DataSourceInstanceSettings<InferscopeOptions>;

describe('applyTemplateVariables', () => {
  beforeEach(() => {
    templateSrv = fakeTemplateSrv({
      target: ['vllm-a', 'vllm-b'],
      model: 'llama-3-8b',
      gpu: ['0', '1'],
      stat: ['p50', 'p99.9'],
      win: '5m',
      est: 'refined',
    });
  });

  it('expands multi-value variables into array entries and keeps literals', () => {
    const ds = new DataSource(settings);
    const out = ds.applyTemplateVariables(
      {
        refId: 'A',
        queryType: 'latency',
        targets: ['$target', 'sglang-c'],
        models: ['${model}'],
        stages: ['ttft'],
        stats: ['mean', '$stat'],
        window: '$win',
        estimator: '$est' as InferscopeQuery['estimator'],
        bounds: true,
      },
      {}
    );
    expect(out).toEqual({
      refId: 'A',
      queryType: 'latency',
      targets: ['vllm-a', 'vllm-b', 'sglang-c'],
      models: ['llama-3-8b'],
      stages: ['ttft'],
      stats: ['mean', 'p50', 'p99.9'],
      window: '5m',
      estimator: 'refined',
      bounds: true,
    });
  });

  it('expands agents and gpus of a gpu query and drops duplicates', () => {
    const ds = new DataSource(settings);
    const out = ds.applyTemplateVariables(
      { refId: 'B', queryType: 'gpu', agents: ['node-a'], gpus: ['$gpu', '1'], signals: ['power'] },
      {}
    );
    expect(out.gpus).toEqual(['0', '1']);
    expect(out.agents).toEqual(['node-a']);
    expect(out.signals).toEqual(['power']);
  });

  it('uses scoped variables (repeated panels) over dashboard values', () => {
    const out = expandList(['$target'], { target: { text: 'vllm-z', value: 'vllm-z' } });
    expect(out).toEqual(['vllm-z']);
  });

  it('replaces variables in raw matchers and metric', () => {
    const ds = new DataSource(settings);
    const out = ds.applyTemplateVariables(
      { refId: 'C', queryType: 'raw', metric: 'vllm:num_requests_running', matchers: { model_name: '$model' } },
      {}
    );
    expect(out.matchers).toEqual({ model_name: 'llama-3-8b' });
    expect(out.metric).toBe('vllm:num_requests_running');
    expect('targets' in out).toBe(false);
  });
});

describe('applyTemplateVariables from the field registry', () => {
  beforeEach(() => {
    templateSrv = fakeTemplateSrv({ v: ['x', 'y'], s: 'one' });
  });

  it('expands the same fields, the same way, as the hand-written version it replaced', () => {
    const ds = new DataSource(settings);
    const q = {
      refId: 'A',
      queryType: 'latency',
      targets: ['$v'],
      models: ['$v'],
      groupBy: '$s',
      window: '$s',
      stages: ['$v'],
      stats: ['$v'],
      estimator: '$s',
      bounds: true,
      format: '$s',
      classes: ['$v'],
      metric: '$s',
      matchers: { a: '$v', b: '$s' },
      agents: ['$v'],
      gpus: ['$v'],
      signals: ['$v'],
      profile: '$s',
      objectives: ['$v'],
      thresholds: [0.5],
      window2: '$s',
    } as unknown as InferscopeQuery;
    // Lists: one entry per value; scalars and matcher values: replaced
    // (a multi-value variable joined with commas); classes, thresholds,
    // bounds and keys the model does not know: untouched.
    expect(JSON.stringify(ds.applyTemplateVariables(q, {}))).toBe(
      JSON.stringify({
        refId: 'A',
        queryType: 'latency',
        targets: ['x', 'y'],
        models: ['x', 'y'],
        groupBy: 'one',
        window: 'one',
        stages: ['x', 'y'],
        stats: ['x', 'y'],
        estimator: 'one',
        bounds: true,
        format: 'one',
        classes: ['$v'],
        metric: 'one',
        matchers: { a: 'x,y', b: 'one' },
        agents: ['x', 'y'],
        gpus: ['x', 'y'],
        signals: ['x', 'y'],
        profile: 'one',
        objectives: ['x', 'y'],
        thresholds: [0.5],
        window2: '$s',
      })
    );
    expect(JSON.stringify(ds.applyTemplateVariables({ refId: 'B', queryType: 'events', format: undefined }, {}))).toBe(
      '{"refId":"B","queryType":"events"}'
    );
  });
});

describe('filterQuery', () => {
  it('skips hidden queries only', () => {
    const ds = new DataSource(settings);
    expect(ds.filterQuery({ refId: 'A', queryType: 'latency' })).toBe(true);
    expect(ds.filterQuery({ refId: 'A', queryType: 'latency', hide: true })).toBe(false);
  });
});

describe('variables', () => {
  it('turns strings and {text,value} answers into MetricFindValues', () => {
    expect(toMetricFindValues(['a', { text: 'GPU 0', value: '0' }, 7, null, { nope: 1 }])).toEqual([
      { text: 'a', value: 'a' },
      { text: 'GPU 0', value: '0' },
      { text: '7', value: '7' },
    ]);
    expect(toMetricFindValues({ not: 'an array' })).toEqual([]);
  });

  it('flattens the per-target answer of GET /signals, leaving out signals no target exports', () => {
    const body = [
      {
        target: 'vllm-a',
        engine: 'vllm',
        signals: [
          { signal: 'ttft', status: 'exported' },
          { signal: 'queue_time', status: 'approximate', note: 'V0 has no queue histogram' },
          { signal: 'tpot', status: 'absent' },
          { signal: 'e2e', status: 'not_seen', lookedFor: ['vllm:e2e_request_latency_seconds_bucket'] },
        ],
      },
      {
        target: 'tgi-b',
        engine: 'tgi',
        signals: [
          { signal: 'ttft', status: 'exported' },
          { signal: 'tpot', status: 'exported' },
        ],
      },
      { target: 'down-c', engine: 'unknown', signals: [] },
    ];
    expect(toMetricFindValues(body)).toEqual([
      { text: 'ttft', value: 'ttft' },
      { text: 'queue_time', value: 'queue_time' },
      { text: 'tpot', value: 'tpot' },
    ]);
  });

  it('registers annotation support whose default query is the events query', () => {
    const ds = new DataSource(settings);
    expect(ds.annotations).toBeDefined();
    expect(ds.annotations?.getDefaultQuery?.()).toEqual({ queryType: 'events' });
  });

  it('metricFindQuery reads GET /<kind> and rejects unknown kinds', async () => {
    const ds = new DataSource(settings);
    const spy = jest.spyOn(ds, 'getResource').mockResolvedValue(['vllm-a', 'vllm-b']);
    await expect(ds.metricFindQuery({ queryType: 'targets' })).resolves.toEqual([
      { text: 'vllm-a', value: 'vllm-a' },
      { text: 'vllm-b', value: 'vllm-b' },
    ]);
    expect(spy).toHaveBeenCalledWith('targets');
    await ds.metricFindQuery('gpus');
    expect(spy).toHaveBeenLastCalledWith('gpus');
    await ds.metricFindQuery({ queryType: 'profiles' });
    expect(spy).toHaveBeenLastCalledWith('profiles');
    await expect(ds.metricFindQuery('urls')).rejects.toThrow('targets, models, agents, gpus, signals, profiles');
  });
});
