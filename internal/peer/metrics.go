package peer

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	cache    *prometheus.CounterVec
	keys     *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_peer_requests_total",
			Help: "Requests to other domains by method and outcome (2xx, 3xx, 4xx, 5xx, too_large, error).",
		}, []string{"method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anchord_peer_request_duration_seconds",
			Help:    "Duration of requests to other domains.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}, []string{"method"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_peer_actor_cache_total",
			Help: "Actor lookups by where the answer came from (memory, store, fetched, stale).",
		}, []string{"source"}),
		keys: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_peer_key_resolutions_total",
			Help: "Resolutions of signing keys by outcome (resolved, failed, failure_remembered: a recent failure answered without a fetch).",
		}, []string{"outcome"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.cache, m.keys} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register peer metrics: %w", err)
		}
	}
	return m, nil
}
