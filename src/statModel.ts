/**
 * A latency statistic: "mean" or a quantile written pNN or pNN.N… with
 * 0 < NN < 100 (p50, p99, p99.9, p99.99).
 */
export function isValidStat(s: string): boolean {
  if (s === 'mean') {
    return true;
  }
  const m = /^p(\d{1,2}(?:\.\d{1,4})?)$/.exec(s);
  if (!m) {
    return false;
  }
  const q = Number(m[1]);
  return q > 0 && q < 100;
}

/** Order statistics as users read them: mean first, then quantiles ascending. */
export function sortStats(stats: string[]): string[] {
  const rank = (s: string) => {
    if (s === 'mean') {
      return -1;
    }
    const r = Number(s.slice(1));
    // Template variables and anything else keep their place after the quantiles.
    return s.startsWith('p') && Number.isFinite(r) ? r : 1000;
  };
  return [...stats].sort((a, b) => rank(a) - rank(b));
}
