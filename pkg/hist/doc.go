// Package hist is the bucket math of Inferscope: quantiles, fractions below a
// threshold, means and their honest error bounds, computed from classic
// Prometheus histograms (cumulative `le` buckets). Semantics follow
// Prometheus's histogram_quantile / histogram_fraction exactly
// (promql.BucketQuantile, promql.BucketFraction), so numbers match a team's
// other dashboards. It does not import the Grafana SDK.
package hist
