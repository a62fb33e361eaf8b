package taskmgr

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a run (label "result" of anchord_taskmgr_runs_total).
const (
	resultOK      = "ok"
	resultError   = "error"
	resultPanic   = "panic"
	resultLost    = "lost"    // cancelled because the permit was lost or no longer trusted
	resultStopped = "stopped" // cancelled because the manager stopped
)

// Reasons of a permit loss (label "reason" of anchord_taskmgr_permit_losses_total).
const (
	lossTaken     = "taken"     // another instance holds the permit now
	lossUntrusted = "untrusted" // no refresh succeeded within the trust window; the run was cancelled
)

type metrics struct {
	runs        *prometheus.CounterVec
	runDuration *prometheus.HistogramVec
	takeovers   *prometheus.CounterVec
	losses      *prometheus.CounterVec
	held        *prometheus.GaugeVec
	checkErrors *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_taskmgr_runs_total", Help: "Task runs by task and result (ok, error, panic, lost, stopped).",
		}, []string{"task", "result"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anchord_taskmgr_run_duration_seconds",
			Help:    "Duration of task runs.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900},
		}, []string{"task"}),
		takeovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_taskmgr_takeovers_total", Help: "Permits this instance took over from a holder that stopped refreshing them.",
		}, []string{"task"}),
		losses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_taskmgr_permit_losses_total", Help: "Permits this instance lost (taken) or stopped trusting during a run (untrusted).",
		}, []string{"task", "reason"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "anchord_taskmgr_permits_held", Help: "1 for each task whose permit this instance holds.",
		}, []string{"task"}),
		checkErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_taskmgr_check_errors_total", Help: "Permit statements that failed (database errors), by task.",
		}, []string{"task"}),
	}
	for _, c := range []prometheus.Collector{m.runs, m.runDuration, m.takeovers, m.losses, m.held, m.checkErrors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register taskmgr metrics: %w", err)
		}
	}
	return m, nil
}
