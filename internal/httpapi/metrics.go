package httpapi

import (
	"fmt"
	"net/http"
	"sync"

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

	// series keeps the requests' and latency's series by their labels: WithLabelValues hashes
	// and checks the label values again on every request, some 2,500 instructions, a few per
	// cent of a resolution (BenchmarkResolutionMissServed). Every label comes from a small
	// fixed set (see front), so it keeps what the vectors keep anyway.
	seriesMu sync.RWMutex
	series   map[requestLabels]requestSeries
}

// requestLabels are a request's labels; code is its status code.
type requestLabels struct {
	route, method string
	code          int
}

type requestSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// observe counts a request and records its latency.
func (m *metrics) observe(route, method string, code int, seconds float64) {
	l := requestLabels{route: route, method: method, code: code}
	m.seriesMu.RLock()
	s, ok := m.series[l]
	m.seriesMu.RUnlock()
	if !ok {
		s = requestSeries{
			requests: m.requests.WithLabelValues(route, method, codeLabel(code)),
			latency:  m.latency.WithLabelValues(route, method),
		}
		m.seriesMu.Lock()
		if m.series == nil {
			m.series = map[requestLabels]requestSeries{}
		}
		m.series[l] = s
		m.seriesMu.Unlock()
	}
	s.requests.Inc()
	s.latency.Observe(seconds)
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
