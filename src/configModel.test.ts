import {
  addAgent,
  addTarget,
  durationError,
  parseGPUList,
  removeAgent,
  Settings,
  updateAgent,
  updateTarget,
  urlError,
} from './configModel';

const base = (jsonData: Settings['jsonData'], extra: Partial<Settings> = {}) =>
  ({ jsonData, secureJsonFields: {}, secureJsonData: {}, ...extra }) as Settings;

describe('configModel', () => {
  it('gives new targets and agents names unused by either list', () => {
    const o = addAgent(
      addTarget(base({ targets: [{ name: 'target-1', url: '' }], gpuAgents: [{ name: 'gpu-node-1', url: '' }] }))
    );
    expect(o.jsonData.targets?.map((t) => t.name)).toEqual(['target-1', 'target-2']);
    expect(o.jsonData.gpuAgents?.map((a) => a.name)).toEqual(['gpu-node-1', 'gpu-node-2']);
  });

  it('renaming an agent updates the targets that name it and moves its unsaved token', () => {
    const o = base(
      {
        targets: [{ name: 't', url: 'http://t', agent: 'node-a', gpus: [0, 1] }],
        gpuAgents: [{ name: 'node-a', url: 'http://a' }],
      },
      { secureJsonData: { 'node-a.bearerToken': 'tok' } }
    );
    const r = updateAgent(o, 0, { name: 'node-b' });
    expect(r.jsonData.targets?.[0]).toEqual({ name: 't', url: 'http://t', agent: 'node-b', gpus: [0, 1] });
    expect(r.secureJsonData).toEqual({ 'node-b.bearerToken': 'tok' });
  });

  it('renaming away from a saved secret resets it instead of leaving it behind', () => {
    const o = base({ targets: [{ name: 'a', url: 'http://a' }] }, { secureJsonFields: { 'a.bearerToken': true } });
    const r = updateTarget(o, 0, { name: 'b' });
    expect(r.secureJsonData).toEqual({ 'a.bearerToken': '' });
    expect(r.secureJsonFields).toEqual({ 'a.bearerToken': false });
  });

  it('removing an agent removes target references to it', () => {
    const o = base({
      targets: [{ name: 't', url: 'http://t', agent: 'node-a', gpus: [2] }],
      gpuAgents: [{ name: 'node-a', url: 'http://a' }],
    });
    const r = removeAgent(o, 0);
    expect(r.jsonData.gpuAgents).toEqual([]);
    expect(r.jsonData.targets).toEqual([{ name: 't', url: 'http://t' }]);
  });

  it('drops cleared optional fields so the JSON stays minimal', () => {
    const o = base({ targets: [{ name: 't', url: 'http://t', engine: 'vllm', tlsSkipVerify: true }] });
    const r = updateTarget(updateTarget(o, 0, { engine: '' }), 0, { tlsSkipVerify: false });
    expect(r.jsonData.targets).toEqual([{ name: 't', url: 'http://t' }]);
  });

  it('parses GPU index lists', () => {
    expect(parseGPUList('0, 1,3,1')).toEqual({ gpus: [0, 1, 3] });
    expect(parseGPUList('')).toEqual({ gpus: [] });
    expect(parseGPUList('0,x').error).toBe('"x" is not a GPU index (0, 1, 2, ...)');
  });
});

describe('urlError and durationError: the backend sentences (pkg/settings, checked with settings.Load)', () => {
  it('refuses what pkg/settings refuses, with the same sentence', () => {
    expect(urlError('targets[0].url', 'ftp://not a url', false)).toBe(
      'targets[0].url: "ftp://not a url" is not an http(s) URL such as http://10.0.0.5:8000/metrics'
    );
    expect(urlError('targets[0].url', '10.0.0.5:8000/metrics', false)).toBe(
      'targets[0].url: "10.0.0.5:8000/metrics" is not an http(s) URL such as http://10.0.0.5:8000/metrics'
    );
    expect(urlError('targets[0].url', 'http://u:p@10.0.0.5:8000/metrics', false)).toBe(
      'targets[0].url: put credentials in the basic-auth user and password fields, not in the URL'
    );
    expect(durationError('scrapeInterval', '5 seconds')).toBe(
      'scrapeInterval: "5 seconds" is not a positive duration such as 15s or 6h'
    );
    expect(durationError('scrapeInterval', '0s')).toBe(
      'scrapeInterval: "0s" is not a positive duration such as 15s or 6h'
    );
    expect(durationError('retention', '1.5h')).toBe('retention: "1.5h" is not a positive duration such as 15s or 6h');
  });

  it('accepts what pkg/settings accepts', () => {
    expect(urlError('targets[0].url', 'http://10.0.0.5:8000/metrics', false)).toBeUndefined();
    expect(urlError('gpuAgents[1].url', 'https://gpu.example.com/metrics', false)).toBeUndefined();
    expect(urlError('targets[0].url', '', true)).toBeUndefined();
    expect(durationError('scrapeInterval', '')).toBeUndefined();
    expect(durationError('scrapeInterval', '15s')).toBeUndefined();
    expect(durationError('retention', '1w2d')).toBeUndefined();
  });
});
