/**
 * The front end's query types against the query schema of the backend
 * (src/generated/queryschema.json, generated from the Go request structs):
 * fails when a type exists on one side only, or when a type's registry entry
 * uses a field, a JSON type or a value (enum, default) the schema does not
 * have. The schema may hold more than the editors use (fields set only by
 * alert rules, such as goodput's objectives).
 */
import schemaJSON from '../generated/queryschema.json';
import { AnyQueryTypeDefinition, QueryField } from './definition';
import { COMMON_FIELDS, QUERY_FIELDS } from './fields';
import { QUERY_TYPE_LIST } from './registry';

interface SchemaField {
  type: string;
  enum?: string[];
}
type Schema = Record<string, Record<string, SchemaField>>;

const SCHEMA_TYPES = ['string', 'number', 'boolean', 'string[]', 'number[]', 'object'];

/** JSON type of a default value, in the schema's terms. */
function jsonType(v: unknown): string {
  if (Array.isArray(v)) {
    return v.every((x) => typeof x === 'number') && v.length > 0 ? 'number[]' : 'string[]';
  }
  return v !== null && typeof v === 'object' ? 'object' : typeof v;
}

/** Every disagreement between the registry and the schema, one sentence each. */
function drift(schema: Schema, types: readonly AnyQueryTypeDefinition[]): string[] {
  const errs: string[] = [];
  const ids = types.map((t) => t.id as string);
  for (const id of ids.filter((i) => !(i in schema))) {
    errs.push(`${id}: a front-end query type the schema does not have`);
  }
  for (const id of Object.keys(schema).filter((i) => !ids.includes(i))) {
    errs.push(`${id}: a query type of the schema with no front-end registry entry`);
  }
  for (const def of types) {
    const fields = schema[def.id];
    if (!fields) {
      continue;
    }
    const used = new Set<QueryField>([
      ...COMMON_FIELDS,
      ...(Object.keys(def.fields) as QueryField[]),
      ...(Object.keys(def.defaults) as QueryField[]),
    ]);
    for (const f of used) {
      const s = fields[f];
      if (!s) {
        errs.push(`${def.id}.${f}: a field the schema does not have for ${def.id}`);
        continue;
      }
      if (s.type !== QUERY_FIELDS[f].type) {
        errs.push(`${def.id}.${f}: ${QUERY_FIELDS[f].type} on the front end, ${s.type} in the schema`);
      }
      if (!s.enum) {
        continue;
      }
      const offered = def.fields[f]?.enum ?? QUERY_FIELDS[f].enum ?? [];
      const dflt = def.defaults[f];
      const values = [...offered, ...(Array.isArray(dflt) ? dflt : typeof dflt === 'string' ? [dflt] : [])];
      if (f === 'queryType') {
        values.push(def.id);
      }
      for (const v of new Set(values.filter((x) => !s.enum!.includes(String(x))))) {
        errs.push(`${def.id}.${f}: "${v}" is not one of the schema's ${s.enum.join(', ')}`);
      }
    }
    for (const [f, v] of Object.entries(def.defaults)) {
      const s = fields[f];
      const t = jsonType(v);
      const ok = s && (t === s.type || (Array.isArray(v) && v.length === 0 && s.type.endsWith('[]')));
      if (s && !ok) {
        errs.push(`${def.id}.${f}: the default ${JSON.stringify(v)} is not a ${s.type}`);
      }
    }
  }
  return errs;
}

const schema = schemaJSON as Schema;

describe('query schema (src/generated/queryschema.json)', () => {
  it('has the documented shape: {type: {field: {type, enum?}}}', () => {
    for (const [type, fields] of Object.entries(schema)) {
      for (const [field, s] of Object.entries(fields)) {
        expect({ at: `${type}.${field}`, type: SCHEMA_TYPES.includes(s.type) }).toEqual({
          at: `${type}.${field}`,
          type: true,
        });
        if (s.enum !== undefined) {
          expect(s.enum.every((v) => typeof v === 'string')).toBe(true);
        }
      }
      // The common fields are in every type.
      expect(Object.keys(fields)).toEqual(
        expect.arrayContaining(['queryType', 'targets', 'models', 'groupBy', 'window'])
      );
    }
  });

  it('holds every front-end query type, field, JSON type, offered value and default', () => {
    expect(drift(schema, QUERY_TYPE_LIST)).toEqual([]);
  });

  it('catches drift: a type, a field or a value on one side only', () => {
    const copy = JSON.parse(JSON.stringify(schema)) as Schema;
    delete copy.events;
    copy.nosuchtype = { queryType: { type: 'string' } };
    delete copy.raw.matchers;
    copy.latency.bounds = { type: 'string' };
    copy.breakdown.format.enum = ['table'];
    copy.gpu.signals.enum = copy.gpu.signals.enum!.filter((s) => s !== 'saturation');
    const errs = drift(copy, QUERY_TYPE_LIST);
    expect(errs).toEqual(
      expect.arrayContaining([
        'events: a front-end query type the schema does not have',
        'nosuchtype: a query type of the schema with no front-end registry entry',
        'raw.matchers: a field the schema does not have for raw',
        'latency.bounds: boolean on the front end, string in the schema',
        'latency.bounds: the default true is not a string',
        'breakdown.format: "timeseries" is not one of the schema\'s table',
        expect.stringMatching(/^gpu\.signals: "saturation" is not one of the schema's dram_active, /),
      ])
    );
    expect(errs).toHaveLength(7);
  });
});
