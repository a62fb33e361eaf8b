package sqlitestore

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector exports database/sql pool statistics at scrape time under the same names as
// pgstore's, with a pool label for the writer and reader pools.
type poolCollector struct {
	pools    map[string]*sql.DB
	total    *prometheus.Desc
	idle     *prometheus.Desc
	acquired *prometheus.Desc
	max      *prometheus.Desc
	waits    *prometheus.Desc
	waitTime *prometheus.Desc
}

func newPoolCollector(pools map[string]*sql.DB) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("anchord_db_pool_"+name, help, []string{"pool"}, prometheus.Labels{"backend": "sqlite"})
	}
	return &poolCollector{
		pools:    pools,
		total:    d("connections", "Open connections."),
		idle:     d("idle_connections", "Idle connections."),
		acquired: d("acquired_connections", "Connections in use."),
		max:      d("max_connections", "Maximum open connections."),
		waits:    d("empty_acquires_total", "Acquires that had to wait for a connection."),
		waitTime: d("acquire_wait_seconds_total", "Time spent waiting for a connection."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.idle, c.acquired, c.max, c.waits, c.waitTime} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for name, db := range c.pools {
		s := db.Stats()
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(s.OpenConnections), name)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.Idle), name)
		ch <- prometheus.MustNewConstMetric(c.acquired, prometheus.GaugeValue, float64(s.InUse), name)
		ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(s.MaxOpenConnections), name)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(s.WaitCount), name)
		ch <- prometheus.MustNewConstMetric(c.waitTime, prometheus.CounterValue, s.WaitDuration.Seconds(), name)
	}
}
