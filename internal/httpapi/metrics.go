package httpapi

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Reasons of anchord_http_rejected_total.
const (
	rejectConnections       = "connections"        // beyond the connection cap: 503
	rejectConnectionDropped = "connection_dropped" // beyond the cap and its slack: closed unanswered
	rejectRate              = "rate"               // client over its request rate: 429
)

type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	inFlight    prometheus.Gauge
	connections prometheus.Gauge
	rejected    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_http_requests_total",
			Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anchord_http_request_duration_seconds",
			Help:    "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_http_requests_in_flight",
			Help: "HTTP requests being served.",
		}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "anchord_http_connections",
			Help: "Open HTTP connections, including those beyond the cap being answered 503.",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_http_rejected_total",
			Help: "Connections and requests refused by the HTTP limits, by reason: connections (503), connection_dropped (closed unanswered), rate (429).",
		}, []string{"reason"}),
	}
	for _, r := range []string{rejectConnections, rejectConnectionDropped, rejectRate} {
		m.rejected.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.inFlight, m.connections, m.rejected} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register http metrics: %w", err)
		}
	}
	return m, nil
}

func metricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
