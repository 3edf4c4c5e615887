import { Settings } from './configModel';
import {
  addObjective,
  addProfile,
  durationSeconds,
  objectiveErrors,
  profileError,
  profileNames,
  profilesOf,
  removeObjective,
  resetProfiles,
  updateObjective,
} from './sloModel';
import { DEFAULT_SLO_PROFILES, ObjectiveConfig } from './types';

function settings(jsonData: Settings['jsonData'] = {}): Settings {
  return { jsonData, secureJsonFields: {}, secureJsonData: {} } as unknown as Settings;
}

describe('SLO profiles model', () => {
  it('offers the backend default profiles when none are configured', () => {
    expect(profileNames(undefined)).toEqual(['interactive-chat', 'code-completion', 'batch-analysis', 'service']);
    const chat = DEFAULT_SLO_PROFILES[0];
    expect(chat.objectives.map((o) => [o.signal, o.threshold, o.target])).toEqual([
      ['ttft', 3, 0.99],
      ['tpot', 0.05, 0.99],
    ]);
    expect(DEFAULT_SLO_PROFILES[1].objectives.map((o) => o.threshold)).toEqual([0.5, 0.03]);
    expect(DEFAULT_SLO_PROFILES[2].objectives.map((o) => o.threshold)).toEqual([30, 0.2]);
    // The service as a whole: TTFT p95 <= 2 s, ITL p95 <= 100 ms, error ratio <= 2 %, availability >= 99.9 %.
    expect(DEFAULT_SLO_PROFILES[3].objectives.map((o) => [o.kind, o.signal, o.threshold, o.target])).toEqual([
      ['latency', 'ttft', 2, 0.95],
      ['latency', 'itl', 0.1, 0.95],
      ['error_ratio', undefined, undefined, 0.98],
      ['availability', undefined, undefined, 0.999],
    ]);
  });

  it('edits a copy of the defaults and can restore them', () => {
    let s = addProfile(settings());
    expect(profilesOf(s).map((p) => p.name)).toEqual([
      'interactive-chat',
      'code-completion',
      'batch-analysis',
      'service',
      'profile-1',
    ]);
    s = addObjective(s, 4);
    expect(profilesOf(s)[4].objectives.map((o) => o.name)).toEqual(['ttft-p99', 'objective-1']);
    s = removeObjective(s, 4, 0);
    expect(profilesOf(s)[4].objectives.map((o) => o.name)).toEqual(['objective-1']);
    expect(resetProfiles(s).jsonData.sloProfiles).toBeUndefined();
  });

  it('drops signal and threshold when an objective becomes an error ratio', () => {
    let s = updateObjective(settings(), 0, 0, { kind: 'error_ratio' });
    const o = profilesOf(s)[0].objectives[0];
    expect(o.kind).toBe('error_ratio');
    expect(o.signal).toBeUndefined();
    expect(o.threshold).toBeUndefined();
    s = updateObjective(s, 0, 0, { period: '' });
    expect('period' in profilesOf(s)[0].objectives[0]).toBe(false);
    s = updateObjective(s, 0, 0, { include4xx: true, includeAborts: true });
    expect(profilesOf(s)[0].objectives[0].include4xx).toBe(true);
    s = updateObjective(s, 0, 0, { includeAborts: false });
    expect('includeAborts' in profilesOf(s)[0].objectives[0]).toBe(false);
    // Availability takes no signal, threshold or error options.
    s = updateObjective(s, 0, 0, { kind: 'availability' });
    const a = profilesOf(s)[0].objectives[0];
    expect([a.kind, a.signal, a.threshold, a.include4xx]).toEqual(['availability', undefined, undefined, undefined]);
  });

  it('names the bad field as the backend would', () => {
    const ok: ObjectiveConfig = { name: 'e2e', signal: 'e2e', threshold: 2, target: 0.99, period: '4w' };
    expect(objectiveErrors(ok, [ok], [])).toEqual({});
    expect(Object.keys(objectiveErrors({ ...ok, threshold: 0 }, [ok], []))).toEqual(['threshold']);
    expect(Object.keys(objectiveErrors({ ...ok, target: 1 }, [ok], []))).toEqual(['target']);
    expect(Object.keys(objectiveErrors({ ...ok, target: 99 }, [ok], []))).toEqual(['target']);
    expect(objectiveErrors({ ...ok, period: '1h' }, [ok], []).period).toMatch(/at least 3d/);
    expect(objectiveErrors({ ...ok, period: 'soon' }, [ok], []).period).toMatch(/not a duration/);
    expect(Object.keys(objectiveErrors({ ...ok, signal: 'latency' }, [ok], []))).toEqual(['signal']);
    expect(objectiveErrors({ ...ok, targets: ['x'] }, [ok], ['a']).targets).toMatch(/"x" is not a configured target/);
    expect(objectiveErrors({ ...ok, name: 'a b' }, [ok], []).name).toBeDefined();
    expect(objectiveErrors(ok, [ok, ok], []).name).toMatch(/used twice/);
    const err: ObjectiveConfig = { name: 'errors', kind: 'error_ratio', target: 0.999 };
    expect(objectiveErrors(err, [err], [])).toEqual({});
    expect(objectiveErrors({ ...ok, period: 'month' }, [ok], [])).toEqual({});
    const up: ObjectiveConfig = { name: 'up', kind: 'availability', target: 0.999 };
    expect(objectiveErrors(up, [up], [])).toEqual({});
    expect(profileError({ name: 'p', objectives: [] }, [])).toMatch(/at least one objective/);
  });

  it('parses Prometheus durations', () => {
    expect(durationSeconds('30d')).toBe(30 * 86400);
    expect(durationSeconds('1w2d')).toBe(9 * 86400);
    expect(durationSeconds('90m')).toBe(5400);
    expect(durationSeconds('3 days')).toBeNaN();
  });
});
