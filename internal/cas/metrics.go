package cas

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
)

type metrics struct {
	written      prometheus.Counter
	read         prometheus.Counter
	objects      prometheus.Counter
	mirrorReads  prometheus.Counter
	mirrorMisses prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_cas_written_bytes_total", Help: "Bytes written to content-addressable storage.",
		}),
		read: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_cas_read_bytes_total", Help: "Bytes read (and verified) from content-addressable storage.",
		}),
		objects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_cas_written_objects_total", Help: "Objects written to content-addressable storage (repeats included).",
		}),
		mirrorReads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_cas_mirror_reads_total", Help: "Files missing locally that were read from the IPFS node (checked and kept).",
		}),
		mirrorMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_cas_mirror_misses_total", Help: "Files missing locally that the IPFS node could not provide either.",
		}),
	}
	for _, c := range []prometheus.Collector{m.written, m.read, m.objects, m.mirrorReads, m.mirrorMisses} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register cas metrics: %w", err)
		}
	}
	return m, nil
}

type pinMetrics struct {
	added, failed, parked, requeued prometheus.Counter
}

func newPinMetrics(reg prometheus.Registerer, st store.Executor) (*pinMetrics, error) {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "anchord_ipfs_pin_" + name, Help: help})
	}
	m := &pinMetrics{
		added:    counter("added_total", "Files added to the IPFS node."),
		failed:   counter("failed_total", "Failed attempts to add a file to the IPFS node (retried)."),
		parked:   counter("parked_total", "Files parked in dead letters after their last attempt."),
		requeued: counter("requeued_total", "Files queued again by pin-missing."),
	}
	backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "anchord_ipfs_pin_backlog", Help: "Files stored locally and not yet on the IPFS node (queued or parked).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := st.CASPinPending(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	for _, c := range []prometheus.Collector{m.added, m.failed, m.parked, m.requeued, backlog} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register IPFS pin metrics: %w", err)
		}
	}
	return m, nil
}
