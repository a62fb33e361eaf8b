package submitter

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type submitterMetrics struct {
	claimed       prometheus.Counter
	submissions   *prometheus.CounterVec
	submitLatency *prometheus.HistogramVec
	held          prometheus.Counter
	relinquished  *prometheus.CounterVec
	parked        prometheus.Counter
	fenced        prometheus.Counter
	anchorsFailed *prometheus.CounterVec
	writeErrors   prometheus.Counter
	roundErrors   prometheus.Counter
}

func newSubmitterMetrics(reg prometheus.Registerer) (*submitterMetrics, error) {
	m := &submitterMetrics{
		claimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_claimed_total", Help: "Ledger batches claimed.",
		}),
		submissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_submitter_submissions_total",
			Help: "Ledger batch submissions, by answer class (accepted, rejected, retry).",
		}, []string{"class"}),
		submitLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "anchord_submitter_submit_duration_seconds",
			Help:    "Time of one ledger batch submission, by answer class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30},
		}, []string{"class"}),
		held: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_held_total",
			Help: "Batches that may have been sent and that the ledger turned out to hold (recorded, not sent again).",
		}),
		relinquished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_submitter_relinquished_total",
			Help: "Claims given up, by reason (retry: backoff after a retry answer; deferred: not sent before the claim deadline or shutdown; write_failed: an outcome could not be recorded).",
		}, []string{"reason"}),
		parked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_parked_total", Help: "Batches parked in dead letters after their last attempt.",
		}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_fenced_total", Help: "Outcomes not written because the claim had been taken over.",
		}),
		anchorsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_submitter_anchors_failed_total",
			Help: "Anchors failed by the submitter, their operations given back to the queue, by reason (rejected, parked).",
		}, []string{"reason"}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_write_errors_total", Help: "Outcomes that could not be recorded in the database.",
		}),
		roundErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_round_errors_total", Help: "Claim rounds that failed (database unavailable).",
		}),
	}
	for _, c := range []prometheus.Collector{m.claimed, m.submissions, m.submitLatency, m.held, m.relinquished,
		m.parked, m.fenced, m.anchorsFailed, m.writeErrors, m.roundErrors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register submitter metrics: %w", err)
		}
	}
	return m, nil
}

type pollerMetrics struct {
	transitions *prometheus.CounterVec
	checks      *prometheus.CounterVec
	resubmitted prometheus.Counter
	anchors     *prometheus.CounterVec
	batches     *prometheus.GaugeVec
	pollErrors  prometheus.Counter
}

func newPollerMetrics(reg prometheus.Registerer) (*pollerMetrics, error) {
	m := &pollerMetrics{
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_submitter_status_transitions_total", Help: "Ledger batch status changes, by old and new dlt_status.",
		}, []string{"from", "to"}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_submitter_status_requests_total", Help: "Batch status requests to the ledger, by result (ok, error).",
		}, []string{"result"}),
		resubmitted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_resubmitted_total", Help: "Batches the ledger lost (UNKNOWN past the grace period), returned to the submitters.",
		}),
		anchors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "anchord_submitter_status_anchors_total",
			Help: "Anchors settled by the status poller, by outcome (completed; failed: INVALID, operations given back to the queue).",
		}, []string{"outcome"}),
		batches: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "anchord_submitter_batches", Help: "Ledger batches by state, as of the last status poll.",
		}, []string{"state"}),
		pollErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_submitter_status_poll_errors_total", Help: "Status polls that failed (database unavailable).",
		}),
	}
	for _, c := range []prometheus.Collector{m.transitions, m.checks, m.resubmitted, m.anchors, m.batches, m.pollErrors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register status poller metrics: %w", err)
		}
	}
	return m, nil
}
