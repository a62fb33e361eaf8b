package logmonitor

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/witnesslog"
)

// TaskID names the monitor's task and permit.
const TaskID = "vct-log-consistency-monitor"

// DeadLetterLogInconsistency is the dead-letter kind of a log found inconsistent.
const DeadLetterLogInconsistency = "log_inconsistency"

// IntervalDefault is how often the logs are checked (Orb's --vct-log-monitoring-interval).
const IntervalDefault = 10 * time.Second

// Log is a witness log to watch.
type Log struct {
	// Domain names the domain that keeps the log, for logs and metrics' readers.
	Domain string
	// Origin names the log in its checkpoints.
	Origin string
	// Key verifies its checkpoints: the domain's actor key.
	Key ed25519.PublicKey
	// Fetch reads the log's resources.
	Fetch witnesslog.FetchFunc
}

// Directory lists the logs to watch: those of the domains this one follows or that witness
// for it. It is asked at every run, so a domain followed later is watched from then on.
type Directory interface {
	Logs(ctx context.Context) ([]Log, error)
}

// FenceFunc fails unless the run of the given permit term still holds the task's permit,
// inside tx (taskmgr.Manager.Fence for TaskID).
type FenceFunc func(ctx context.Context, tx store.Executor, term int64) error

// Config configures a Monitor.
type Config struct {
	Interval   time.Duration
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Monitor is the log consistency monitor.
type Monitor struct {
	cfg   Config
	st    store.Store
	dir   Directory
	fence FenceFunc
	m     *metrics
}

// New returns a Monitor that keeps its checkpoints in st and watches the logs dir lists.
func New(cfg Config, st store.Store, dir Directory, fence FenceFunc) (*Monitor, error) {
	if st == nil || dir == nil || fence == nil {
		return nil, errors.New("log monitor: a store, a directory and a fence are required")
	}
	cfg.Interval = cmp.Or(cfg.Interval, IntervalDefault)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Monitor{cfg: cfg, st: st, dir: dir, fence: fence, m: m}, nil
}

// Interval is the task's interval.
func (m *Monitor) Interval() time.Duration { return m.cfg.Interval }

// Outcome is what one check of one log found.
type Outcome string

// Outcomes of Check.
const (
	// OutcomeFirst: no checkpoint was stored; this one is now.
	OutcomeFirst Outcome = "first"
	// OutcomeAdvanced: the log grew consistently; the new checkpoint is stored.
	OutcomeAdvanced Outcome = "advanced"
	// OutcomeUnchanged: the log serves the stored tree.
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeInconsistent: the log is not an extension of the stored tree; reported.
	OutcomeInconsistent Outcome = "inconsistent"
	// OutcomeKnownInconsistent: as OutcomeInconsistent, for a log already reported.
	OutcomeKnownInconsistent Outcome = "known_inconsistent"
)

// RunTask checks every log the directory lists; it is the task's Run. The error joins the
// logs that could not be checked.
func (m *Monitor) RunTask(ctx context.Context, term int64) error {
	logs, err := m.dir.Logs(ctx)
	if err != nil {
		return fmt.Errorf("log monitor: list logs: %w", err)
	}
	var errs []error
	for _, l := range logs {
		if ctx.Err() != nil {
			break
		}
		if _, err := m.Check(ctx, l, term); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Check checks one log under the permit term.
func (m *Monitor) Check(ctx context.Context, l Log, term int64) (Outcome, error) {
	out, err := m.check(ctx, l, term)
	if err != nil {
		m.m.checks.WithLabelValues("error").Inc()
		m.cfg.Logger.WarnContext(ctx, "check witness log", "domain", l.Domain, "log", l.Origin, "error", err)
		return "", fmt.Errorf("check log %s of %s: %w", l.Origin, l.Domain, err)
	}
	m.m.checks.WithLabelValues(string(out)).Inc()
	return out, nil
}

func (m *Monitor) check(ctx context.Context, l Log, term int64) (Outcome, error) {
	peer, err := witnesslog.NewPeer(l.Origin, l.Key, l.Fetch)
	if err != nil {
		return "", err
	}
	latest, err := peer.Checkpoint(ctx)
	if err != nil {
		return "", err
	}
	row, err := m.st.LogCheckpointGet(ctx, l.Origin)
	if errors.Is(err, store.ErrNotFound) {
		return m.advance(ctx, l, latest, OutcomeFirst)
	}
	if err != nil {
		return "", err
	}
	stored, err := witnesslog.OpenCheckpoint(row.Checkpoint, l.Origin, l.Key)
	if err != nil {
		// The stored note verified when it was stored: the domain's key changed since.
		return "", fmt.Errorf("the stored checkpoint no longer verifies with the domain's key: %w", err)
	}
	err = peer.VerifyConsistency(ctx, stored, latest)
	var evidence *witnesslog.InconsistencyError
	switch {
	case errors.As(err, &evidence):
		return m.inconsistent(ctx, l, row, evidence, term)
	case err != nil:
		return "", err
	case latest.Size == stored.Size:
		return OutcomeUnchanged, nil
	}
	return m.advance(ctx, l, latest, OutcomeAdvanced)
}

func (m *Monitor) advance(ctx context.Context, l Log, cp witnesslog.Checkpoint, out Outcome) (Outcome, error) {
	ok, err := m.st.LogCheckpointAdvance(ctx, l.Origin, cp.Raw, cp.Size)
	if err != nil {
		return "", err
	}
	if !ok {
		// Another run stored a larger checkpoint meanwhile; the next run checks against it.
		return OutcomeUnchanged, nil
	}
	m.m.size.WithLabelValues(l.Origin).Set(float64(cp.Size))
	return out, nil
}

// Evidence is the payload of a log_inconsistency dead letter.
type Evidence struct {
	Domain string `json:"domain"`
	Origin string `json:"origin"`
	// Older is the checkpoint verified before, Newer the one that contradicts it; both are
	// the signed notes as served.
	Older []byte `json:"older"`
	Newer []byte `json:"newer"`
	// Proof is the consistency proof built from the log's tiles, when one was needed.
	Proof  [][]byte `json:"proof,omitempty"`
	Reason string   `json:"reason"`
}

func (m *Monitor) inconsistent(ctx context.Context, l Log, row store.LogCheckpoint, ev *witnesslog.InconsistencyError, term int64) (Outcome, error) {
	m.m.inconsistencies.Inc()
	if row.Rejected != nil {
		m.cfg.Logger.DebugContext(ctx, "witness log still inconsistent", "domain", l.Domain, "log", l.Origin, "size", ev.Newer.Size)
		return OutcomeKnownInconsistent, nil
	}
	payload, err := json.Marshal(Evidence{
		Domain: l.Domain, Origin: l.Origin, Older: ev.Older.Raw, Newer: ev.Newer.Raw, Proof: ev.Proof, Reason: ev.Err.Error(),
	})
	if err != nil {
		return "", fmt.Errorf("encode evidence: %w", err)
	}
	err = m.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := m.fence(ctx, tx, term); err != nil {
			return err
		}
		if err := tx.LogCheckpointReject(ctx, l.Origin, ev.Newer.Raw); err != nil {
			return err
		}
		_, err := tx.DeadLetterInsert(ctx, store.DeadLetter{
			Kind: DeadLetterLogInconsistency, Ref: l.Origin, Payload: payload, Reason: ev.Error(), Attempts: 1,
		})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("report inconsistency: %w", err)
	}
	m.m.reported.Inc()
	m.cfg.Logger.ErrorContext(ctx, "witness log is inconsistent: it broke its append-only promise",
		"domain", l.Domain, "log", l.Origin, "older_size", ev.Older.Size, "newer_size", ev.Newer.Size, "reason", ev.Err)
	return OutcomeInconsistent, nil
}

// RetryDeadLetter is the retry of a log_inconsistency dead letter (deadletter.KindRetryFunc):
// the operator accepts the log as it is now, so the stored checkpoint is forgotten and the
// next run trusts the log's checkpoint as a first one.
func RetryDeadLetter(ctx context.Context, tx store.Executor, d store.DeadLetter) error {
	if err := tx.LogCheckpointForget(ctx, d.Ref); err != nil {
		return fmt.Errorf("retry log inconsistency of %s: %w", d.Ref, err)
	}
	return nil
}
