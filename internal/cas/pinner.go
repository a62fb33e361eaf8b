package cas

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// Mirror is a second home for the content: an IPFS node (ipfs.Client). The local store stays
// the source of truth; the mirror lets anyone fetch the files without trusting this server, and
// serves reads the local store misses.
type Mirror interface {
	// Add stores data in the mirror under the CID of version v and returns that CID.
	Add(ctx context.Context, data []byte, v CIDVersion) (string, error)
	// Get returns the content of cid, at most maxBytes, checked against the CID.
	Get(ctx context.Context, cid string, maxBytes int64) ([]byte, error)
	// Pins visits every CID the mirror keeps.
	Pins(ctx context.Context, visit func(cid string) error) error
}

// DeadLetterIPFSAdd is the dead-letter kind of a file the mirror never took.
const DeadLetterIPFSAdd = "ipfs_add"

// Defaults of PinnerConfig.
const (
	// PinIntervalDefault is how often an idle pinner looks for due files; a file stored by
	// this process wakes it at once.
	PinIntervalDefault = time.Second
	// PinBatchDefault is the most files one pinner claims at once.
	PinBatchDefault = 32
	// PinClaimTTLDefault bounds how long a claimed file is held from other instances.
	PinClaimTTLDefault = 5 * time.Minute
)

// PinnerConfig configures a Pinner.
type PinnerConfig struct {
	// Owner names this instance in the pin claims.
	Owner    string
	Interval time.Duration
	Batch    int
	ClaimTTL time.Duration
	// Redelivery is the retry schedule of failed adds; after MaxAttempts a file is parked.
	Redelivery pubsub.RedeliveryConfig
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Pinner adds the files the local store queued to the mirror, retrying with backoff and
// parking (a dead letter of kind ipfs_add) after the last attempt, so an IPFS outage never
// blocks or loses an anchor. Every instance of a cluster may run one: claims keep them apart.
type Pinner struct {
	cfg    PinnerConfig
	st     store.Store
	cas    *Store
	mirror Mirror
	m      *pinMetrics
	wake   chan struct{}
	signal testsignal.Signal[PinResult]
}

// NewPinner returns a Pinner that adds to mirror the files cas stores.
func NewPinner(cfg PinnerConfig, st store.Store, cs *Store, mirror Mirror) (*Pinner, error) {
	if cfg.Owner == "" {
		return nil, errors.New("cas pinner: owner is empty")
	}
	cfg.Interval = cmp.Or(cfg.Interval, PinIntervalDefault)
	cfg.Batch = cmp.Or(cfg.Batch, PinBatchDefault)
	cfg.ClaimTTL = cmp.Or(cfg.ClaimTTL, PinClaimTTLDefault)
	cfg.Redelivery = cfg.Redelivery.WithDefaults()
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.Interval < 0 || cfg.Batch < 0 || cfg.ClaimTTL < 0 {
		return nil, errors.New("cas pinner: negative interval, batch or claim TTL")
	}
	m, err := newPinMetrics(cfg.Registerer, st)
	if err != nil {
		return nil, err
	}
	p := &Pinner{cfg: cfg, st: st, cas: cs, mirror: mirror, m: m, wake: make(chan struct{}, 1)}
	cs.pinned = p.Wake
	return p, nil
}

// Wake makes the pinner look for due files now.
func (p *Pinner) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// PinResult describes one runOnce.
type PinResult struct {
	Added, Failed, Parked int
}

// Run adds due files until ctx is done.
func (p *Pinner) Run(ctx context.Context) error {
	for {
		res, err := p.runOnce(ctx)
		if err != nil && ctx.Err() == nil {
			p.cfg.Logger.WarnContext(ctx, "IPFS pinner round failed", "error", err)
		}
		if res.Added+res.Failed+res.Parked > 0 {
			continue // there may be more
		}
		t := time.NewTimer(loop.Jitter(p.cfg.Interval, 0.1))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-p.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

func (p *Pinner) runOnce(ctx context.Context) (PinResult, error) {
	var res PinResult
	pins, err := p.st.CASPinClaim(ctx, store.CASPinClaimParams{Owner: p.cfg.Owner, Limit: p.cfg.Batch, TTL: p.cfg.ClaimTTL})
	if err != nil {
		return res, fmt.Errorf("claim files for IPFS: %w", err)
	}
	for _, pin := range pins {
		if ctx.Err() != nil {
			break
		}
		addErr := p.add(ctx, pin.CID)
		switch {
		case addErr == nil:
			if err := p.st.CASPinDone(ctx, pin.CID, p.cfg.Owner); err != nil {
				return res, err
			}
			res.Added++
			p.m.added.Inc()
		case pin.Attempts+1 >= p.cfg.Redelivery.MaxAttempts:
			if err := p.park(ctx, pin, addErr); err != nil {
				return res, err
			}
			res.Parked++
			p.m.parked.Inc()
		default:
			history := appendLine(pin.History, fmt.Sprintf("attempt %d at %s: %v", pin.Attempts+1, time.Now().UTC().Format(time.RFC3339), addErr))
			retry := loop.Backoff(pin.Attempts+1, p.cfg.Redelivery.InitialInterval, p.cfg.Redelivery.Multiplier, p.cfg.Redelivery.MaxInterval)
			if err := p.st.CASPinFail(ctx, store.CASPinFailParams{CID: pin.CID, Owner: p.cfg.Owner, Retry: retry, History: history}); err != nil {
				return res, err
			}
			res.Failed++
			p.m.failed.Inc()
			p.cfg.Logger.DebugContext(ctx, "IPFS add failed; retrying", "cid", pin.CID, "attempts", pin.Attempts+1, "retry_in", retry, "error", addErr)
		}
	}
	p.signal.Signal(res)
	return res, nil
}

// add reads a file from the local store and adds it to the mirror under the same CID.
func (p *Pinner) add(ctx context.Context, cid string) error {
	parsed, err := ParseCID(cid)
	if err != nil {
		return err
	}
	data, err := p.cas.getLocal(ctx, cid, 0)
	if err != nil {
		return err
	}
	got, err := p.mirror.Add(ctx, data, parsed.Version)
	if err != nil {
		return err
	}
	if got != parsed.String() {
		return fmt.Errorf("IPFS stored %s under %s", cid, got)
	}
	return nil
}

func (p *Pinner) park(ctx context.Context, pin store.CASPin, cause error) error {
	reason := fmt.Sprintf("IPFS add failed %d times: %v", pin.Attempts+1, cause)
	err := p.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := tx.CASPinPark(ctx, pin.CID, p.cfg.Owner); err != nil {
			return err
		}
		_, err := tx.DeadLetterInsert(ctx, store.DeadLetter{
			Kind: DeadLetterIPFSAdd, Ref: pin.CID, Payload: []byte(pin.CID), Reason: reason,
			Attempts: pin.Attempts + 1, History: pin.History,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("park IPFS add of %s: %w", pin.CID, err)
	}
	p.cfg.Logger.WarnContext(ctx, "IPFS add parked in dead letters", "cid", pin.CID, "reason", reason)
	return nil
}

// RetryDeadLetter is the retry path of a parked ipfs_add (deadletter.KindRetryFunc): the file
// is queued again, in the transaction that deletes its dead letter.
func (p *Pinner) RetryDeadLetter(ctx context.Context, tx store.Executor, d store.DeadLetter) error {
	store.OnCommit(ctx, p.Wake)
	return tx.CASPinQueue(ctx, []string{d.Ref}, true)
}

// PinMissing queues again every locally stored file the mirror does not keep (a wiped or new
// node) and returns how many it queued.
func (p *Pinner) PinMissing(ctx context.Context) (int, error) {
	have := map[string]bool{}
	if err := p.mirror.Pins(ctx, func(cid string) error {
		if c, err := ParseCID(cid); err == nil {
			have[c.String()] = true
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("pin missing: list the node's pins: %w", err)
	}
	queued := 0
	after := ""
	for {
		page, err := p.st.CASList(ctx, after, 1000)
		if err != nil {
			return queued, fmt.Errorf("pin missing: %w", err)
		}
		if len(page) == 0 {
			break
		}
		var missing []string
		for _, cid := range page {
			if !have[cid] {
				missing = append(missing, cid)
			}
		}
		if err := p.st.CASPinQueue(ctx, missing, true); err != nil {
			return queued, fmt.Errorf("pin missing: %w", err)
		}
		queued += len(missing)
		after = page[len(page)-1]
	}
	p.m.requeued.Add(float64(queued))
	p.cfg.Logger.InfoContext(ctx, "queued files the IPFS node lacks", "files", queued, "node_pins", len(have))
	p.Wake()
	return queued, nil
}

func appendLine(h []string, line string) []string {
	const maxLines = 20
	out := append(append([]string(nil), h...), line)
	if len(out) > maxLines {
		out = out[len(out)-maxLines:]
	}
	return out
}
