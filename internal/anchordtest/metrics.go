package anchordtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// SampleCount returns how many observations the histograms c collects hold, summed over their
// labels. testutil.CollectAndCount counts series instead, which for a plain histogram is
// always one, whatever it observed.
func SampleCount(t testing.TB, c prometheus.Collector) uint64 {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var n uint64
	for m := range ch {
		var d dto.Metric
		require.NoError(t, m.Write(&d))
		n += d.GetHistogram().GetSampleCount()
	}
	return n
}

// HistogramCount is SampleCount of the histogram family name that reg gathers; the test fails
// when reg has none of that name.
func HistogramCount(t testing.TB, reg prometheus.Gatherer, name string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			var n uint64
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	require.Failf(t, "metric not gathered", "no metric %s", name)
	return 0
}
