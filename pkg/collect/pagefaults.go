package collect

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// maxFaultsPerKind bounds the page faults named per kind; the rest are counted.
const maxFaultsPerKind = 5

// pageFaults collects, while a page is parsed, the shapes a Prometheus server stores without a
// word but that make the answers wrong:
//   - a duplicate series (the same name and labels twice on one page): Prometheus keeps the
//     first sample and drops the other ("duplicate sample for timestamp"), so which value is
//     stored depends on the order of the page;
//   - a classic histogram whose buckets decrease with le (a cumulative count cannot): PromQL's
//     histogram_quantile then "fixes" the buckets by taking the running maximum, and a
//     quantile lands in a bucket no observation fell in.
type pageFaults struct {
	seen    map[string]float64
	dups    []string
	nDups   int
	buckets map[string][]leCount
	names   map[string]string // bucket group key → its rendering without le
}

type leCount struct {
	le  float64
	raw string
	v   float64
}

func newPageFaults() *pageFaults {
	return &pageFaults{seen: map[string]float64{}, buckets: map[string][]leCount{}, names: map[string]string{}}
}

// add records one sample of the page.
func (f *pageFaults) add(lset labels.Labels, v float64) {
	key := lset.String()
	if prev, ok := f.seen[key]; ok {
		f.nDups++
		if len(f.dups) < maxFaultsPerKind {
			f.dups = append(f.dups, fmt.Sprintf("%s appears twice (%s, then %s): only the first value is stored", seriesText(lset), strconv.FormatFloat(prev, 'g', -1, 64), strconv.FormatFloat(v, 'g', -1, 64)))
		}
		return
	}
	f.seen[key] = v
	name := lset.Get(model.MetricNameLabel)
	if !strings.HasSuffix(name, "_bucket") || !lset.Has("le") {
		return
	}
	raw := lset.Get("le")
	le, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return
	}
	group := labels.NewBuilder(lset).Del("le").Labels()
	gk := group.String()
	f.names[gk] = seriesText(group)
	f.buckets[gk] = append(f.buckets[gk], leCount{le, raw, v})
}

// sentences names the faults found, one sentence each (at most maxFaultsPerKind per kind, then
// how many more), duplicates first, then histograms in the order of their names.
func (f *pageFaults) sentences() []string {
	out := slices.Clone(f.dups)
	if f.nDups > len(f.dups) {
		out = append(out, fmt.Sprintf("and %d more duplicate series", f.nDups-len(f.dups)))
	}
	var bad []string
	nBad := 0
	keys := make([]string, 0, len(f.buckets))
	for k := range f.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		bs := f.buckets[k]
		slices.SortStableFunc(bs, func(a, b leCount) int { return hist.CompareBounds(a.le, b.le) })
		for i := 1; i < len(bs); i++ {
			if bs[i].v < bs[i-1].v && !math.IsNaN(bs[i].v) {
				nBad++
				if len(bad) < maxFaultsPerKind {
					bad = append(bad, fmt.Sprintf("%s: the bucket le=%q holds %s but le=%q below it holds %s; cumulative buckets cannot decrease, so its quantiles are not trusted", f.names[k], bs[i].raw, strconv.FormatFloat(bs[i].v, 'g', -1, 64), bs[i-1].raw, strconv.FormatFloat(bs[i-1].v, 'g', -1, 64)))
				}
				break
			}
		}
	}
	out = append(out, bad...)
	if nBad > len(bad) {
		out = append(out, fmt.Sprintf("and %d more histograms whose buckets decrease", nBad-len(bad)))
	}
	return out
}

// seriesText renders a series as PromQL writes it: name{label="value", …}.
func seriesText(lset labels.Labels) string {
	var parts []string
	lset.Range(func(l labels.Label) {
		if l.Name != model.MetricNameLabel {
			parts = append(parts, l.Name+"="+strconv.Quote(l.Value))
		}
	})
	return lset.Get(model.MetricNameLabel) + "{" + strings.Join(parts, ", ") + "}"
}

// upstreamURL matches a label value naming another server (scheme://host…).
var upstreamURL = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://.+`)

// upstreamsOf returns the URL values of the re-export labels among a page's labels, sorted.
func upstreamsOf(labelValues map[string][]string) []string {
	var out []string
	for _, l := range catalog.ReExportLabels {
		for _, v := range labelValues[l] {
			if upstreamURL.MatchString(v) && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}
