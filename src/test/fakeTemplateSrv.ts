import { ScopedVars } from '@grafana/data';

/**
 * A small stand-in for Grafana's TemplateSrv with the behaviour the data
 * source relies on: `$name` and `${name}` are replaced; a multi-value
 * variable hands its whole array to the format function (as Grafana does),
 * and without one is joined with commas; scopedVars override dashboard values.
 */
export function fakeTemplateSrv(vars: Record<string, string | string[]>) {
  return {
    getVariables: () => Object.keys(vars).map((name) => ({ name })),
    replace(target?: string, scopedVars?: ScopedVars, format?: string | ((value: unknown) => string)): string {
      if (target === undefined) {
        return '';
      }
      return target.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced: string | undefined, plain: string | undefined) => {
        const name = (braced ?? plain) as string;
        const scoped = scopedVars?.[name];
        const value = scoped !== undefined ? scoped.value : vars[name];
        if (value === undefined) {
          return whole;
        }
        if (typeof format === 'function') {
          return format(value);
        }
        return Array.isArray(value) ? value.join(',') : String(value);
      });
    },
  };
}
