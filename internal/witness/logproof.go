package witness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
	"github.com/anchord/anchord/internal/witnesslog"
)

// LogProofTaskID is the proof monitor's task (Orb's name): it checks that every witness that
// promised, in its AnchorReceipt, to have logged a credential did log it.
const LogProofTaskID = "vct-monitor"

// Defaults of the proof monitor.
const (
	// LogProofIntervalDefault is --vct-monitoring-interval (Orb's default).
	LogProofIntervalDefault = 10 * time.Second
	// LogProofMaxRecordsDefault is how many promises one run checks.
	LogProofMaxRecordsDefault = 500
)

// LogEntry is the entry a witness appends to its log for credential c: the JCS form of c
// without proofs. The origin recomputes it from the credential it offered, so a promise names
// only the log and the index.
func LogEntry(c *vc.Credential) ([]byte, error) {
	b, err := c.WithoutProofs().MarshalJSON()
	if err != nil {
		return nil, err
	}
	// Transformed again so that the entry is JCS whatever MarshalJSON writes.
	return jcs.Transform(b)
}

// PeerLogs finds the witness log of another domain, for the proof monitor.
type PeerLogs interface {
	// PeerLog returns the Peer reading actor's witness log, whose checkpoints verify with
	// actor's key (and count only with the witnesses' quorum, when the Peer has one), and the
	// log's origin. ok is false when actor keeps no log we can read; an
	// error means it could not be found out this time.
	PeerLog(ctx context.Context, actor string) (p *witnesslog.Peer, origin string, ok bool, err error)
}

// LogProofConfig configures the proof monitor.
type LogProofConfig struct {
	Interval   time.Duration
	MaxRecords int
	// MaxClockSkew is allowed past a promise's deadline before it is called broken.
	MaxClockSkew time.Duration
	Logger       *slog.Logger
	Registerer   prometheus.Registerer
}

// LogProofs is the proof monitor (task LogProofTaskID). For each unsettled promise, oldest
// first, it reads the witness's latest checkpoint (verified with the witness's key) and
// verifies that the credential's entry is at the promised index. Included: the promise is
// verified and no longer watched, and a pending anchor completes if its policy now holds
// (under LogRequired a logged proof counts only from then on). Another leaf at that index, or
// no checkpoint covering it once the deadline has passed: the promise is broken, the witness's
// proof stops counting, and a pending anchor is looked at again at once by the anchor status
// monitor (which asks another witness if the policy no longer holds). A log that cannot be
// read settles nothing: the promise is checked again at the next run.
type LogProofs struct {
	cfg     LogProofConfig
	st      store.Store
	peers   PeerLogs
	origin  *Witnessing
	now     func() time.Time
	settled *prometheus.CounterVec
}

// NewLogProofs returns the proof monitor of the promises recorded in st for origin's anchors.
// It also becomes origin's check of a promise as its proof arrives (Witnessing.HandleAccept),
// so that both use one code path and one count of verified promises: call it before origin
// handles Accepts.
func NewLogProofs(cfg LogProofConfig, st store.Store, peers PeerLogs, origin *Witnessing) (*LogProofs, error) {
	if st == nil || peers == nil || origin == nil {
		return nil, errors.New("new proof monitor: a store, the peer logs and the origin side are required")
	}
	cfg.Interval = cmp.Or(cfg.Interval, LogProofIntervalDefault)
	cfg.MaxRecords = cmp.Or(cfg.MaxRecords, LogProofMaxRecordsDefault)
	cfg.MaxClockSkew = cmp.Or(cfg.MaxClockSkew, MaxClockSkewDefault)
	if cfg.Interval < 0 || cfg.MaxRecords < 0 || cfg.MaxClockSkew < 0 {
		return nil, errors.New("new proof monitor: negative interval, count or skew")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	settled := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "anchord_witness_log_promises_total",
		Help: "Witness log promises settled, by outcome: verified (the credential is in the log at the promised index, found by the proof monitor or as the proof arrived) or broken."},
		[]string{"outcome"})
	if err := cfg.Registerer.Register(settled); err != nil {
		return nil, err
	}
	p := &LogProofs{cfg: cfg, st: st, peers: peers, origin: origin, now: time.Now, settled: settled}
	origin.promises = p
	return p, nil
}

// Interval is the task's interval.
func (p *LogProofs) Interval() time.Duration { return p.cfg.Interval }

// RunTask is the task's run: one pass over the unsettled promises. Settling is a conditional
// update, so a run that overlaps another (a permit lost and taken) settles each promise once.
func (p *LogProofs) RunTask(ctx context.Context, _ int64) error {
	res, err := p.runOnce(ctx)
	if res != (LogProofResult{}) {
		p.cfg.Logger.DebugContext(ctx, "witness log promises checked", "verified", res.Verified, "broken", res.Broken,
			"waiting", res.Waiting, "unreadable", res.Unreadable)
	}
	return err
}

// LogProofResult is what one run of the proof monitor did.
type LogProofResult struct {
	Verified, Broken, Waiting, Unreadable int
}

// peerState is a witness's log as read once per run: one checkpoint for all its promises.
type peerState struct {
	peer   *witnesslog.Peer
	origin string
	ok     bool
	cp     witnesslog.Checkpoint
	err    error
}

func (p *LogProofs) runOnce(ctx context.Context) (LogProofResult, error) {
	var res LogProofResult
	open, err := p.st.LogPromisesUnsettled(ctx, p.cfg.MaxRecords)
	if err != nil {
		return res, fmt.Errorf("proof monitor: %w", err)
	}
	peers := map[string]*peerState{}
	anchors := map[int64]promisedEntry{}
	var errs []error
	for _, w := range open {
		if ctx.Err() != nil {
			break
		}
		ps, ok := peers[w.Actor]
		if !ok {
			ps = readPeer(ctx, p.peers, w.Actor)
			peers[w.Actor] = ps
			if ps.err != nil {
				// Once per witness and run: its other promises wait for the next run too.
				errs = append(errs, fmt.Errorf("witness %s: %w", w.Actor, ps.err))
			}
		}
		if ps.err != nil {
			res.Unreadable++
			continue
		}
		pe, ok := anchors[w.Seq]
		if !ok {
			if pe, err = p.entry(ctx, w.Seq); err != nil {
				errs = append(errs, err)
				continue
			}
			anchors[w.Seq] = pe
		}
		late := p.now().After(w.Promise.Deadline.Add(p.cfg.MaxClockSkew))
		broken, reason, err := judge(ctx, ps, *w.Promise, pe.entry, late)
		switch {
		case err != nil:
			res.Unreadable++
			errs = append(errs, fmt.Errorf("witness %s, anchor %d, index %d: %w", w.Actor, w.Seq, w.Promise.Index, err))
			continue
		case !broken && reason != "":
			res.Waiting++
			p.cfg.Logger.DebugContext(ctx, "witness log promise not kept yet", "witness", w.Actor, "anchor_seq", w.Seq,
				"index", w.Promise.Index, "deadline", w.Promise.Deadline, "reason", reason)
			continue
		}
		settled, err := p.settle(ctx, w, pe, broken, reason)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if settled && broken {
			res.Broken++
		} else if settled {
			res.Verified++
		}
	}
	return res, errors.Join(errs...)
}

// readPeer reads actor's log and its latest checkpoint; a log it does not keep (any more) is
// not an error: its promises cannot be kept and break at their deadline.
func readPeer(ctx context.Context, peers PeerLogs, actor string) *peerState {
	peer, origin, ok, err := peers.PeerLog(ctx, actor)
	if err != nil || !ok {
		return &peerState{ok: false, err: err}
	}
	cp, err := peer.Checkpoint(ctx)
	if err != nil {
		return &peerState{err: err}
	}
	if !cp.Quorum {
		// Not evidence of anything: the promise is judged on a checkpoint the witnesses agree on,
		// at a later run.
		return &peerState{err: fmt.Errorf("log %s, size %d: %w", origin, cp.Size, witnesslog.ErrNotCosigned)}
	}
	return &peerState{peer: peer, origin: origin, ok: true, cp: cp}
}

// promisedEntry is the log entry of an anchor's credential, the anchor's hashlink and when it
// was offered.
type promisedEntry struct {
	entry    []byte
	hashlink string
	offered  time.Time
}

// entry is the log entry of anchor seq's credential.
func (p *LogProofs) entry(ctx context.Context, seq int64) (promisedEntry, error) {
	wa, err := p.st.WitnessAnchorGet(ctx, seq)
	if err != nil {
		return promisedEntry{}, fmt.Errorf("anchor %d: %w", seq, err)
	}
	c, err := vc.ParseCredential(wa.Credential)
	if err != nil {
		return promisedEntry{}, fmt.Errorf("anchor %d credential: %w", seq, err)
	}
	entry, err := LogEntry(c)
	if err != nil {
		return promisedEntry{}, fmt.Errorf("anchor %d credential: %w", seq, err)
	}
	return promisedEntry{entry: entry, hashlink: wa.Hashlink, offered: wa.CreatedAt}, nil
}

// judge decides about one promise, whose deadline has passed if late: verified (false, ""),
// broken (true, why), not yet (false, why), or an error when the log could not be read. The
// proof monitor and the check of a proof on arrival (verifyOnArrival) both judge with it.
func judge(ctx context.Context, ps *peerState, promise store.LogPromise, entry []byte, late bool) (bool, string, error) {
	if !ps.ok || ps.origin != promise.Origin {
		reason := fmt.Sprintf("the witness's log is not %s", promise.Origin)
		if ps.ok {
			reason = fmt.Sprintf("the witness's log is %s, not the promised %s", ps.origin, promise.Origin)
		}
		return late, reason, nil
	}
	err := ps.peer.VerifyInclusion(ctx, ps.cp, uint64(promise.Index), entry)
	switch {
	case err == nil:
		return false, "", nil
	case errors.Is(err, witnesslog.ErrNotIncluded):
		return true, "another entry is at the promised index", nil
	case errors.Is(err, witnesslog.ErrNotCovered):
		return late, fmt.Sprintf("no checkpoint covers the index (size %d)", ps.cp.Size), nil
	}
	return false, "", err
}

// verifyOnArrival reports whether actor's promise is kept now: the entry is at the promised
// index of a checkpoint its log serves. It reads the log as a run of the monitor does and
// judges the promise the same way, but settles nothing: anything short of verified (the log
// unreadable, the index not covered yet, even another entry there) is left to the monitor,
// which alone breaks promises, with the consequences that has.
func (p *LogProofs) verifyOnArrival(ctx context.Context, actor string, promise store.LogPromise, entry []byte) bool {
	ps := readPeer(ctx, p.peers, actor)
	if ps.err != nil {
		p.cfg.Logger.DebugContext(ctx, "witness log not read on the proof's arrival; the proof monitor checks it", "witness", actor, "err", ps.err)
		return false
	}
	broken, reason, err := judge(ctx, ps, promise, entry, false)
	if err != nil || broken || reason != "" {
		p.cfg.Logger.DebugContext(ctx, "witness log promise not verified on the proof's arrival; the proof monitor checks it",
			"witness", actor, "index", promise.Index, "reason", reason, "err", err)
		return false
	}
	return true
}

// settle records the verdict once. A broken promise of a pending anchor makes the anchor due
// at once for the status monitor, in the same transaction: the proof no longer counts, and the
// policy may need another witness. A verified one may be what a LogRequired policy was waiting
// for: the anchor completes in the same transaction if its policy now holds.
func (p *LogProofs) settle(ctx context.Context, w store.AnchorWitness, pe promisedEntry, broken bool, reason string) (bool, error) {
	hashlink := pe.hashlink
	var settled, pending, completed bool
	err := p.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		settled, pending, completed = false, false, false
		var err error
		if settled, err = tx.LogPromiseSettle(ctx, w.Seq, w.Actor, broken); err != nil || !settled {
			return err
		}
		a, err := tx.AnchorGet(ctx, w.Seq)
		if err != nil {
			return err
		}
		if pending = a.Status == store.AnchorPending; !pending {
			return nil
		}
		if broken {
			return tx.WitnessAnchorSetCheck(ctx, w.Seq, 0)
		}
		completed, err = p.origin.completeIfSatisfied(ctx, tx, w.Seq)
		return err
	})
	if err == nil && settled && !broken && pending && !completed {
		// Another witness's proof may have been verified in a transaction that ran alongside
		// ours, each seeing only its own (READ COMMITTED): look again now that ours is
		// committed, as addProof does.
		err = p.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			var err error
			completed, err = p.origin.completeIfSatisfied(ctx, tx, w.Seq)
			return err
		})
	}
	if err != nil {
		return false, fmt.Errorf("settle the promise of %s for anchor %d: %w", w.Actor, w.Seq, err)
	}
	if !settled {
		return false, nil
	}
	if !broken {
		p.settled.WithLabelValues("verified").Inc()
		p.cfg.Logger.DebugContext(ctx, "witness log promise verified", "witness", w.Actor, "anchor_seq", w.Seq, "anchor", hashlink, "index", w.Promise.Index)
		if completed {
			p.origin.m.witnessTime.Observe(time.Since(pe.offered).Seconds())
			p.cfg.Logger.InfoContext(ctx, "witness policy satisfied once a log promise was verified", "anchor_seq", w.Seq, "witness", w.Actor)
		}
		return true, nil
	}
	p.settled.WithLabelValues("broken").Inc()
	p.cfg.Logger.ErrorContext(ctx, "witness broke its log promise: its proof no longer counts",
		"witness", w.Actor, "anchor_seq", w.Seq, "anchor", hashlink, "log", w.Promise.Origin, "index", w.Promise.Index,
		"deadline", w.Promise.Deadline, "reason", reason, "anchor_pending", pending)
	return true, nil
}
