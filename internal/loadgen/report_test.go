package loadgen

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNiceStep(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]float64{20.9: 5, 20: 5, 4: 1, 1: 0.2, 3500: 500, 0: 1, 7.7: 2} {
		require.InDelta(t, want, niceStep(v), 1e-9, "%v", v)
	}
}

// TestReportOfAnEmptyRunDrawsEmptyPlots: a run that measured nothing still gives a page that
// says so instead of failing or dividing by zero.
func TestReportOfAnEmptyRun(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, writeReport(&b, Default(), Summary{Elapsed: 2 * time.Second}))
	require.Equal(t, 3, strings.Count(b.String(), "no data"))
	require.NotContains(t, b.String(), "NaN")
	require.NotContains(t, b.String(), "Inf")
}
