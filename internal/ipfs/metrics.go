package ipfs

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcome labels of anchord_ipfs_requests_total.
const (
	outcomeOK          = "ok"
	outcomeUnavailable = "unavailable" // no answer: ErrUnavailable
	outcomeError       = "error"       // the node answered an error: *Error
	outcomeTooLarge    = "too_large"   // ErrTooLarge
	outcomeMismatch    = "mismatch"    // ErrMismatch
	outcomeCanceled    = "canceled"    // the caller's context ended first
	outcomeInvalid     = "invalid"     // a malformed answer, or the caller's bad argument
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	added    prometheus.Counter
	read     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_ipfs_requests_total", Help: "Requests to the IPFS node's RPC API, by operation and outcome.",
		}, []string{"op", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "anchord_ipfs_request_duration_seconds", Help: "Duration of requests to the IPFS node's RPC API, by operation.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"op"}),
		added: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_ipfs_added_bytes_total", Help: "Bytes of files the IPFS node accepted with the expected CID.",
		}),
		read: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_ipfs_read_bytes_total", Help: "Bytes of files read from the IPFS node within their limit.",
		}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.added, m.read} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register ipfs metrics: %w", err)
		}
	}
	return m, nil
}
