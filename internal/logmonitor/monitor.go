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
	// Quorum, when set, is the witness policy the log's checkpoints must satisfy before they are
	// accepted; an inconsistent checkpoint is evidence with or without it.
	Quorum witnesslog.Quorum
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
	// WitnessPrefixes are the URL prefixes of the witnesses of the policy, each asked at every
	// check for the latest checkpoint it cosigned of the log: a witness shown another tree than
	// the one this monitor accepted is a fork (a split view), reported as an inconsistency.
	WitnessPrefixes []string
	// WitnessFetch reads below a witness's prefix; required with WitnessPrefixes.
	WitnessFetch func(prefix string) witnesslog.FetchFunc
	Interval     time.Duration
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
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
	if len(cfg.WitnessPrefixes) > 0 && cfg.WitnessFetch == nil {
		return nil, errors.New("log monitor: witness prefixes need a fetch function")
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
	// OutcomeNotCosigned: the checkpoint is consistent but lacks the witnesses' quorum; it is
	// not accepted, and the log is checked again at the next run.
	OutcomeNotCosigned Outcome = "not_cosigned"
)

// peerError is a failure to read or verify another domain's log: that domain's trouble, warned
// and counted per log by Check and tried again at the next run. It does not fail the run, whose
// failure an operator reads as this domain's (the task manager logs it as an error).
type peerError struct{ err error }

func (e peerError) Error() string { return e.err.Error() }
func (e peerError) Unwrap() error { return e.err }

// RunTask checks every log the directory lists; it is the task's Run. The error joins the
// logs that could not be checked for a reason of this domain's (its store); a log its domain
// does not serve, or serves unverifiable, is only warned about (peerError).
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
		if _, err := m.Check(ctx, l, term); err != nil && !errors.As(err, new(peerError)) {
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
	peer.WithQuorum(l.Quorum)
	latest, err := peer.Checkpoint(ctx)
	if err != nil {
		return "", peerError{err}
	}
	row, err := m.st.LogCheckpointGet(ctx, l.Origin)
	if errors.Is(err, store.ErrNotFound) {
		if !latest.Quorum {
			return m.notCosigned(ctx, l, latest), nil
		}
		out, err := m.advance(ctx, l, latest, OutcomeFirst)
		if err != nil {
			return out, err
		}
		return m.witnessViews(ctx, l, peer, latest, term, out)
	}
	if err != nil {
		return "", err
	}
	stored, err := witnesslog.OpenCheckpoint(row.Checkpoint, l.Origin, l.Key)
	if err != nil {
		// The stored note verified when it was stored: the domain's key changed since.
		return "", fmt.Errorf("the stored checkpoint no longer verifies with the domain's key: %w", err)
	}
	// A signed checkpoint that contradicts the accepted one is evidence whether or not it is
	// cosigned: the log signed both.
	err = peer.VerifyConsistency(ctx, stored, latest)
	var evidence *witnesslog.InconsistencyError
	switch {
	case errors.As(err, &evidence):
		return m.inconsistent(ctx, l, row, evidence, "", term)
	case err != nil:
		return "", peerError{err}
	case !latest.Quorum:
		return m.notCosigned(ctx, l, latest), nil
	case latest.Size == stored.Size:
		return m.witnessViews(ctx, l, peer, stored, term, OutcomeUnchanged)
	}
	out, err := m.advance(ctx, l, latest, OutcomeAdvanced)
	if err != nil {
		return out, err
	}
	return m.witnessViews(ctx, l, peer, latest, term, out)
}

func (m *Monitor) notCosigned(ctx context.Context, l Log, cp witnesslog.Checkpoint) Outcome {
	m.cfg.Logger.WarnContext(ctx, "witness log checkpoint not accepted: it lacks the witnesses' quorum",
		"domain", l.Domain, "log", l.Origin, "size", cp.Size)
	return OutcomeNotCosigned
}

// witnessViews asks each witness of the policy for the latest checkpoint it cosigned of the
// log and checks it against accepted, the checkpoint this monitor holds: a witness that was
// shown a tree that is not consistent with ours saw the other side of a split view. A witness
// that serves nothing, cannot be read, or serves a note that does not verify with the log's key
// is skipped: only two signed checkpoints are evidence.
func (m *Monitor) witnessViews(ctx context.Context, l Log, peer *witnesslog.Peer, accepted witnesslog.Checkpoint, term int64, out Outcome) (Outcome, error) {
	for _, prefix := range m.cfg.WitnessPrefixes {
		view, ok, err := peer.WitnessView(ctx, m.cfg.WitnessFetch(prefix))
		if err != nil {
			m.cfg.Logger.DebugContext(ctx, "witness's view of the log not read", "witness", prefix, "log", l.Origin, "error", err)
			continue
		}
		if !ok {
			continue
		}
		older, newer := accepted, view
		if view.Size < accepted.Size {
			older, newer = view, accepted
		}
		err = peer.VerifyConsistency(ctx, older, newer)
		var evidence *witnesslog.InconsistencyError
		switch {
		case errors.As(err, &evidence):
			row, err := m.st.LogCheckpointGet(ctx, l.Origin)
			if err != nil {
				return "", err
			}
			return m.inconsistent(ctx, l, row, evidence, prefix, term)
		case err != nil:
			m.cfg.Logger.DebugContext(ctx, "witness's view of the log not checked", "witness", prefix, "log", l.Origin, "error", err)
		}
	}
	return out, nil
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
	// Witness is the prefix of the witness that served one of the two checkpoints (the one it
	// cosigned), when the fork was found through a witness's view; empty when the log served
	// both.
	Witness string `json:"witness,omitempty"`
	// OlderCosigned and NewerCosigned say whether each checkpoint satisfied the quorum.
	OlderCosigned bool `json:"olderCosigned"`
	NewerCosigned bool `json:"newerCosigned"`
}

func (m *Monitor) inconsistent(ctx context.Context, l Log, row store.LogCheckpoint, ev *witnesslog.InconsistencyError, witness string, term int64) (Outcome, error) {
	m.m.inconsistencies.Inc()
	if row.Rejected != nil {
		m.cfg.Logger.DebugContext(ctx, "witness log still inconsistent", "domain", l.Domain, "log", l.Origin, "size", ev.Newer.Size)
		return OutcomeKnownInconsistent, nil
	}
	payload, err := json.Marshal(Evidence{
		Domain: l.Domain, Origin: l.Origin, Older: ev.Older.Raw, Newer: ev.Newer.Raw, Proof: ev.Proof, Reason: ev.Err.Error(),
		Witness: witness, OlderCosigned: ev.Older.Quorum, NewerCosigned: ev.Newer.Quorum,
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
	m.cfg.Logger.ErrorContext(ctx, "witness log is inconsistent: it broke its append-only promise (a fork)",
		"domain", l.Domain, "log", l.Origin, "older_size", ev.Older.Size, "newer_size", ev.Newer.Size,
		"older_cosigned", ev.Older.Quorum, "newer_cosigned", ev.Newer.Quorum, "witness", witness, "reason", ev.Err)
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
