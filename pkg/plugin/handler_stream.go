package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
)

// streamPath is the one live channel: per-target queue depth, running
// requests and KV-cache usage, pushed once per scrape interval.
const streamPath = "saturation"

// SubscribeStream accepts subscriptions to the saturation channel only.
func (i *Instance) SubscribeStream(_ context.Context, req *backend.SubscribeStreamRequest) (*backend.SubscribeStreamResponse, error) {
	if req.Path != streamPath || i.querier == nil {
		return &backend.SubscribeStreamResponse{Status: backend.SubscribeStreamStatusNotFound}, nil
	}
	return &backend.SubscribeStreamResponse{Status: backend.SubscribeStreamStatusOK}, nil
}

// PublishStream refuses publishing: the channel is server-driven.
func (i *Instance) PublishStream(context.Context, *backend.PublishStreamRequest) (*backend.PublishStreamResponse, error) {
	return &backend.PublishStreamResponse{Status: backend.PublishStreamStatusPermissionDenied}, nil
}

// RunStream sends one wide frame per scrape interval: time, then per target
// running, waiting (requests) and kv_cache_usage (ratio 0..1) fields. The
// values come from the same catalogue builders as the saturation query
// (catalog.GaugePromQL with catalog.PartitionAgg): replicas and process splits
// count once, partitions add up (ratios are averaged), and samples that
// cannot be true are left out. Each such sample on the latest scrape is named
// in a warning notice on the frame (target, labels, value, time), as the
// saturation query names them over its range.
func (i *Instance) RunStream(ctx context.Context, req *backend.RunStreamRequest, sender *backend.StreamSender) error {
	if req.Path != streamPath || i.querier == nil {
		return fmt.Errorf("stream %q is not served", req.Path)
	}
	ticker := time.NewTicker(i.settings.ScrapeInterval)
	defer ticker.Stop()
	scope := catalog.Scope{By: []string{"target"}}
	type part struct {
		sig  catalog.Signal
		unit string
	}
	parts := []part{{catalog.RequestsRunning, "short"}, {catalog.RequestsWaiting, "short"}, {catalog.KVCacheUsage, "percentunit"}}
	for {
		now := i.now()
		f := data.NewFrame(streamPath, data.NewField("time", nil, []time.Time{now}))
		var notices []data.Notice
		for _, p := range parts {
			q, err := catalog.GaugePromQL(p.sig, scope, catalog.PartitionAgg(p.sig))
			if err != nil {
				return err
			}
			v, err := i.querier.Query(ctx, q, now)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				continue
			}
			vec, _ := v.(model.Vector)
			for _, s := range vec {
				fld := data.NewField(string(p.sig), data.Labels{"target": string(s.Metric["job"])}, []float64{float64(s.Value)})
				fld.Config = &data.FieldConfig{Unit: p.unit}
				f.Fields = append(f.Fields, fld)
			}
			for _, t := range fetch.ImpossibleNow(ctx, i.querier, p.sig, now) {
				notices = append(notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: t})
			}
		}
		if len(notices) > 0 {
			f.Meta = &data.FrameMeta{Notices: notices}
		}
		i.scrub.frame(f) // notices name labels a page may have filled with a secret
		if err := sender.SendFrame(f, data.IncludeAll); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}
