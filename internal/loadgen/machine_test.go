package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseProcStat(t *testing.T) {
	t.Parallel()
	stat := "cpu  100 5 50 800 40 3 2 9 7 0\ncpu0 50 2 25 400 20 1 1 4 0 0\ncpu1 50 3 25 400 20 2 1 5 0 0\nintr 1 2 3\nctxt 99\n"
	busy, steal, total, cores := parseProcStat([]byte(stat))
	require.Equal(t, 2, cores)
	require.Equal(t, uint64(100+5+50+3+2+9), busy, "idle and iowait are not busy; guest is inside user")
	require.Equal(t, uint64(9), steal)
	require.Equal(t, uint64(100+5+50+800+40+3+2+9), total)

	busy, steal, total, cores = parseProcStat([]byte("cpu  x 1 2 3\n"))
	require.Zero(t, busy+steal+total+uint64(cores), "an unreadable line gives nothing")
}

func TestMetricValue(t *testing.T) {
	t.Parallel()
	text := "# HELP process_cpu_seconds_total Total user and system CPU time.\n" +
		"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total_other 1\nprocess_cpu_seconds_total 12.5\n"
	v, err := metricValue(strings.NewReader(text), "process_cpu_seconds_total")
	require.NoError(t, err)
	require.InDelta(t, 12.5, v, 1e-9)
	_, err = metricValue(strings.NewReader("go_goroutines 3\n"), "process_cpu_seconds_total")
	require.Error(t, err)
}

func TestUsageBetween(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	a := usageSample{at: t0, busy: 1000, total: 2000, cores: 2, server: 10, self: time.Second}
	b := usageSample{at: t0.Add(10 * time.Second), busy: 2900, total: 4000, cores: 2, server: 27, self: 4 * time.Second}
	u := usageBetween(a, b)
	require.InDelta(t, 0.95, u.Busy, 1e-9)
	require.Zero(t, u.Steal)
	require.InDelta(t, 1.7, u.ServerCores, 1e-9)
	require.InDelta(t, 0.3, u.GeneratorCores, 1e-9)
	require.Equal(t, "machine 2 cores 95 % busy, server 1.70 cores, generator 0.30 cores", u.String())

	b.steal = 200
	require.Equal(t, "machine 2 cores 95 % busy (10 % stolen), server 1.70 cores, generator 0.30 cores", usageBetween(a, b).String())
	b.server = math.NaN()
	u = usageBetween(a, b)
	require.True(t, math.IsNaN(u.ServerCores))
	require.Contains(t, u.String(), "server cores ?")
}
