package witnesslog

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

func TestMetricsCountAppendsAndReadTheTree(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t)
			reg := prometheus.NewRegistry()
			tb.cfg.Registerer = reg
			l := b.open(t, tb.cfg)
			const n = 20
			appendAll(t, l, testEntries("metrics", n), 4)
			_, err := l.AwaitCheckpoint(anchordtest.Context(t, testTimeout), n-1)
			require.NoError(t, err)
			_, err = l.Append(anchordtest.Context(t, testTimeout), nil)
			require.Error(t, err)

			require.Equal(t, float64(n), testutil.ToFloat64(l.m.appends))
			require.Equal(t, float64(0), testutil.ToFloat64(l.m.failures), "a refused entry is not a failed append")
			got, err := testutil.GatherAndCount(reg, "anchord_witnesslog_append_duration_seconds")
			require.NoError(t, err)
			require.Equal(t, 1, got)
			families, err := reg.Gather()
			require.NoError(t, err)
			gauges := map[string]float64{}
			for _, f := range families {
				if f.GetType().String() == "GAUGE" {
					gauges[f.GetName()] = f.GetMetric()[0].GetGauge().GetValue()
				}
			}
			require.Equal(t, float64(n), gauges["anchord_witnesslog_tree_size"])
			require.Equal(t, float64(n), gauges["anchord_witnesslog_checkpoint_size"])
		})
	}
}
