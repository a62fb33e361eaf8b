package cas

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	written prometheus.Counter
	read    prometheus.Counter
	objects prometheus.Counter
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
	}
	for _, c := range []prometheus.Collector{m.written, m.read, m.objects} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register cas metrics: %w", err)
		}
	}
	return m, nil
}
