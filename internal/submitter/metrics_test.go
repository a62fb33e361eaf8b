package submitter

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st, devledger.Config{}, 2*time.Second)
		b.anchors(t, 3)
		reg := prometheus.NewRegistry()
		s := b.submitter(t, "s1", nil, func(c *Config) { c.Registerer = reg })
		_, err := s.runOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 3.0, testutil.ToFloat64(s.m.claimed))
		require.Equal(t, 3.0, testutil.ToFloat64(s.m.submissions.WithLabelValues("accepted")))
		n, err := testutil.GatherAndCount(reg, "anchord_submitter_submit_duration_seconds")
		require.NoError(t, err)
		require.Equal(t, 1, n, "one histogram, for the accepted class")

		preg := prometheus.NewRegistry()
		p := b.poller(t, nil, func(c *PollerConfig) { c.Registerer = preg })
		b.ledger.Clock.Advance(time.Minute)
		_, err = p.RunOnce(t.Context())
		require.NoError(t, err)
		require.Equal(t, 3.0, testutil.ToFloat64(p.m.transitions.WithLabelValues("PENDING", "COMMITTED")))
		require.Equal(t, 3.0, testutil.ToFloat64(p.m.anchors.WithLabelValues("completed")))
		require.Equal(t, 3.0, testutil.ToFloat64(p.m.batches.WithLabelValues("committed")))
		require.Equal(t, 0.0, testutil.ToFloat64(p.m.batches.WithLabelValues("unsettled")))
		require.Equal(t, 1.0, testutil.ToFloat64(p.m.checks.WithLabelValues("ok")))

		// A ledger that is always unavailable: one retry, then parked at the second attempt.
		down := setup(t, st, devledger.Config{Faults: devledger.FaultConfig{Unavailable: 1}}, 2*time.Second)
		writeAnchors(t, st, down.writer, "Down", 1, 1)
		reg2 := prometheus.NewRegistry()
		s2 := down.submitter(t, "s2", down.client, func(c *Config) {
			c.Registerer, c.MaxAttempts, c.BackoffInitial, c.BackoffMax = reg2, 2, time.Millisecond, time.Millisecond
		})
		for testutil.ToFloat64(s2.m.parked) == 0 {
			_, err := s2.runOnce(t.Context())
			require.NoError(t, err)
		}
		require.Equal(t, 2.0, testutil.ToFloat64(s2.m.submissions.WithLabelValues("retry")))
		require.Equal(t, 1.0, testutil.ToFloat64(s2.m.relinquished.WithLabelValues("retry")))
		require.Equal(t, 1.0, testutil.ToFloat64(s2.m.anchorsFailed.WithLabelValues("parked")))
		for _, name := range []string{"anchord_submitter_claimed_total", "anchord_submitter_submissions_total",
			"anchord_submitter_relinquished_total", "anchord_submitter_parked_total", "anchord_submitter_anchors_failed_total"} {
			n, err := testutil.GatherAndCount(reg2, name)
			require.NoError(t, err)
			require.Positive(t, n, name)
		}
	})
}
