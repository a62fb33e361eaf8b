package amqppubsub

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the package's Prometheus metrics. The topic label is the destination: the
// application topic (for publishes and for redeliveries forwarded back to its queue), or
// "redelivery", "wait" or "parked" for the package's own queues.
type metrics struct {
	published      *prometheus.CounterVec
	confirmed      *prometheus.CounterVec
	publishFailed  *prometheus.CounterVec
	delivered      *prometheus.CounterVec
	acked          *prometheus.CounterVec
	nacked         *prometheus.CounterVec
	redelivered    *prometheus.CounterVec
	parked         *prometheus.CounterVec
	handlerSeconds *prometheus.HistogramVec
	connectionUp   *prometheus.GaugeVec
	connections    *prometheus.GaugeVec
	blocked        *prometheus.GaugeVec
	dials          *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns, sub = "anchord", "pubsub"
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: name, Help: help,
		}, labels))
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Subsystem: sub, Name: name, Help: help,
		}, labels))
	}
	return &metrics{
		published:     counter("published_total", "Messages sent to the broker, confirmed or not, by destination (publishes and redeliveries).", "topic"),
		confirmed:     counter("confirmed_total", "Messages the broker confirmed.", "topic"),
		publishFailed: counter("publish_failed_total", "Messages not confirmed: broker unreachable, nack, unroutable or timeout.", "topic"),
		delivered:     counter("delivered_total", "Deliveries handed to a handler.", "topic"),
		acked:         counter("acked_total", "Deliveries acked after their handler returned nil.", "topic"),
		nacked:        counter("nacked_total", "Deliveries whose handler returned an error.", "topic"),
		redelivered: counter("redelivered_total",
			"Failed messages scheduled for redelivery, by wait tier (0s: at once).", "topic", "tier"),
		parked: counter("parked_total", "Messages parked after exhausting their attempts or failing permanently.", "topic"),
		handlerSeconds: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "handler_duration_seconds",
			Help:    "Time handlers take, by topic.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"topic"})),
		connectionUp: gauge("connection_up", "1 while the role has a live broker connection, else 0.", "role"),
		connections:  gauge("connections", "Open broker connections.", "role"),
		blocked:      gauge("connections_blocked", "Open broker connections the broker says it blocks (a memory or disk alarm): their publishes wait.", "role"),
		dials:        counter("dials_total", "Connection attempts, by result (ok, error).", "role", "result"),
	}
}

// register registers c, or returns the collector already registered under the same name, so
// that several instances in one process share their metrics.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// A different collector with the same name is a programming error in the wiring;
		// keep working with an unregistered collector rather than fail the broker client.
		return c
	}
	return c
}
