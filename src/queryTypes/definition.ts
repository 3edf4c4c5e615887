import { ComponentType } from 'react';

import { EditorDataSource, InferscopeQuery, ProfileConfig, QueryOf, QueryType } from '../types';

/**
 * JSON type of a query field, as src/generated/queryschema.json writes it
 * (a Go string, float64, bool, []string, []float64 or map).
 */
export type FieldType = 'string' | 'number' | 'boolean' | 'string[]' | 'number[]' | 'object';

/**
 * How applyTemplateVariables treats a field: `list` expands each element
 * (a multi-value variable becomes several elements), `scalar` replaces
 * variables in the string, `map` replaces them in every value, `none`
 * leaves the field as it is.
 */
export type Templating = 'list' | 'scalar' | 'map' | 'none';

/** One field of the query JSON (an {@link InferscopeQuery} key). */
export interface FieldSpec {
  type: FieldType;
  templating: Templating;
  /** Every value the field may take (each element's, for a list); absent: free text. */
  enum?: readonly string[];
  /**
   * A field owned by several types that means the same in each (the
   * objectives of slo and burn_rate): switching between them keeps it.
   */
  carry?: boolean;
}

/** The fields of an Inferscope query beyond Grafana's DataQuery (refId, hide, datasource, …). */
export type QueryField = Exclude<keyof InferscopeQuery, 'refId' | 'hide' | 'key' | 'datasource'>;

/** A field a query type reads, beyond the common ones. */
export interface FieldUse {
  /**
   * The type owns the field: switching the query to a type that does not
   * own it drops it (unless both own it and it carries over). A field no
   * type owns (profile, classes) stays when the type changes.
   */
  owned: boolean;
  /** The values this type accepts when narrower than the field's own (format). */
  enum?: readonly string[];
}

/**
 * Props every query type's editor receives from QueryEditor: the query as a
 * query of type T (its own fields only, src/generated/queryTypes.ts).
 */
export interface QueryTypeEditorProps<T extends QueryType = QueryType> {
  query: QueryOf<T>;
  /** Sets the query and runs it; run=false for edits that should not run it yet (a matcher being typed). */
  // A method, so an editor of several types (slo and burn_rate) serves each one's entry.
  onChange(query: QueryOf<T>, run?: boolean): void;
  datasource: EditorDataSource;
  /** The data source's SLO profiles (undefined: the backend's default profiles). */
  profiles: ProfileConfig[] | undefined;
}

/** Which of the common controls the query editor shows above the type's own. */
export interface SharedControls {
  targets: boolean;
  models: boolean;
  groupBy: boolean;
  window: boolean;
}

/**
 * One query type on the front end: everything the editor, the type switch,
 * the defaults and the schema check need. One file per type in
 * src/queryTypes/, listed once in registry.ts.
 */
export interface QueryTypeDefinition<T extends QueryType> {
  /** The `queryType` of the query JSON (the backend's registry key). */
  id: T;
  /** Name in words. */
  label: string;
  /** What the type returns, one line (the picker's description). */
  description: string;
  /** Fields the editor fills in when the user switches to this type. */
  defaults: Partial<InferscopeQuery>;
  shared: SharedControls;
  /** Fields beyond the common ones (queryType, targets, models, groupBy, window) this type reads. */
  fields: Partial<Record<QueryField, FieldUse>>;
  /** Editor of the type's own fields; absent when it has none (throughput, saturation). */
  editor?: ComponentType<QueryTypeEditorProps<NoInfer<T>>>;
}

/** The definition of any one query type (an entry of the registry's list). */
export type AnyQueryTypeDefinition = { [K in QueryType]: QueryTypeDefinition<K> }[QueryType];

/** Identity with the id's literal type kept, for entries. */
export function defineQueryType<T extends QueryType>(def: QueryTypeDefinition<T>): QueryTypeDefinition<T> {
  return def;
}
