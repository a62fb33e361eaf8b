package mempubsub

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the subset of amqppubsub's metrics that mean something in process, under the same
// names, so that dashboards work in both modes. The topic label is the application topic.
type metrics struct {
	published      *prometheus.CounterVec
	delivered      *prometheus.CounterVec
	acked          *prometheus.CounterVec
	nacked         *prometheus.CounterVec
	redelivered    *prometheus.CounterVec
	parked         *prometheus.CounterVec
	handlerSeconds *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	const ns, sub = "anchord", "pubsub"
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Subsystem: sub, Name: name, Help: help,
		}, labels))
	}
	return &metrics{
		published: counter("published_total", "Messages put in a queue, by topic (publishes and redeliveries).", "topic"),
		delivered: counter("delivered_total", "Deliveries handed to a handler.", "topic"),
		acked:     counter("acked_total", "Deliveries whose handler returned nil.", "topic"),
		nacked:    counter("nacked_total", "Deliveries whose handler returned an error.", "topic"),
		redelivered: counter("redelivered_total",
			"Failed messages scheduled for redelivery, by wait (0s: at once).", "topic", "tier"),
		parked: counter("parked_total", "Messages parked after exhausting their attempts or failing permanently.", "topic"),
		handlerSeconds: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: "handler_duration_seconds",
			Help:    "Time handlers take, by topic.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"topic"})),
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
		return c
	}
	return c
}
