package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/intake"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/relay"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/submitter"
	"github.com/anchord/anchord/internal/taskmgr"
	"github.com/anchord/anchord/internal/vc"
	"github.com/anchord/anchord/internal/witness"
)

// checkpointWait bounds how long a witness with a log waits, before it answers an Offer, for a
// published checkpoint covering the credential it logged: a few of the log's checkpoint
// intervals (witnesslog.CheckpointIntervalDefault, 1 s).
const checkpointWait = 5 * time.Second

// pendingTTL is how long a DID stays reserved for its pending operation (intake's default, 0,
// for the local and ledger backends). With witnesses an operation may wait in an anchor for
// --max-witness-delay plus the grace period and then be anchored again: the reservation must
// outlast that, or a second operation on the DID could be accepted and anchored on a previous
// anchor that is no longer the DID's last. Three rounds cover an anchor that fails twice; the
// TTL stays a safety net for operations lost elsewhere, not the normal release.
func (c *core) pendingTTL() time.Duration {
	if c.cfg.AnchorBackend != "witness" {
		return 0
	}
	return max(intake.PendingTTLDefault, 3*(c.cfg.Witness.MaxWitnessDelay+c.cfg.Witness.GracePeriod))
}

// witnessConfig is the witnessing configuration of this domain, both sides.
func (c *core) witnessConfig(ctx context.Context, svc *federation.Service, component string) (witness.Config, error) {
	key, err := c.domainKey(ctx)
	if err != nil {
		return witness.Config{}, err
	}
	did, err := vc.DIDWeb(svc.Endpoint())
	if err != nil {
		return witness.Config{}, err
	}
	w := c.cfg.Witness
	return witness.Config{
		Identity:        witness.Identity{ActorIRI: svc.ActorIRI(), Endpoint: svc.Endpoint(), DID: did, Key: key},
		MaxWitnessDelay: w.MaxWitnessDelay, GracePeriod: w.GracePeriod, MonitorInterval: w.MonitorInterval,
		MaxRecords: w.MaxRecords, MaxClockSkew: c.cfg.Federation.MaxClockSkew,
		Logger: c.log(component), Registerer: c.reg,
	}, nil
}

// witnessBackend builds the witnessed anchor backend on the ActivityPub service: anchors are
// offered to witnesses and complete on their proofs; the handler of their Accepts is
// registered on svc, and the anchor status monitor (one instance at a time) re-offers and, when
// no witness is left, fails anchors and gives their operations back through giveBack.
func (c *core) witnessBackend(ctx context.Context, svc *federation.Service, giveBack anchor.GiveBackTxFunc) (*witness.Witnessing, error) {
	cfg, err := c.witnessConfig(ctx, svc, "witness")
	if err != nil {
		return nil, err
	}
	logs := &witnessLogs{svc: svc, interval: cfg.MonitorInterval, logger: c.log("witness"), has: map[string]bool{}, learned: map[string]uint64{}}
	cfg.HasLog = logs.hasLog
	// It only reads other domains' WebFinger documents.
	c.sup.add(StageConsumers, "witness-logs", logs.Run)
	if err := svc.OnWitnessAccepted(logs.learn); err != nil {
		return nil, err
	}
	requeue := submitter.RequeueFunc(anchor.RequeueFunc(anchor.RequeueConfig{
		Profile: c.profile, Limits: c.limits, FetchFunc: c.cas.FetchFunc, GiveBackTxFunc: giveBack,
	}))
	keys := relay.AuthorKeys(svc.Client().Fetch)
	wakeObserver := func(int64) {
		if c.obs != nil {
			c.obs.Notify()
		}
	}
	w, err := witness.New(cfg, c.st, svc.PostTx, keys, witness.RequeueFunc(requeue), wakeObserver)
	if err != nil {
		return nil, err
	}
	// The proof monitor checks the log promises that came with the proofs, and is the check of a
	// promise as its proof arrives: built before the Accepts are handled. Under
	// --witness-log-monitor-policy it reads a witness's log only through checkpoints that carry
	// the quorum.
	witnesses, err := c.monitorWitnesses()
	if err != nil {
		return nil, err
	}
	proofs, err := witness.NewLogProofs(witness.LogProofConfig{
		Interval: c.cfg.Witness.ProofMonitorInterval, MaxRecords: cfg.MaxRecords, MaxClockSkew: cfg.MaxClockSkew,
		Logger: c.log("vct-monitor"), Registerer: c.reg,
	}, c.st, peerLogs{dir: &logDirectory{st: c.st, svc: svc, client: svc.Client(), logger: c.log("vct-monitor"), witnesses: witnesses}}, w)
	if err != nil {
		return nil, err
	}
	if err := svc.RegisterAnswerHandler(activity.TypeOffer, federation.Handler{Handle: func(ctx context.Context, in federation.Inbound) error {
		_, err := w.HandleAccept(ctx, witness.Inbound{Activity: in.Activity, Actor: in.Actor})
		return witnessError(err)
	}}); err != nil {
		return nil, err
	}
	if err := c.tasks.Register(taskmgr.Task{ID: witness.MonitorTaskID, Interval: w.Interval(), Run: w.RunTask}); err != nil {
		return nil, err
	}
	if err := c.tasks.Register(taskmgr.Task{ID: witness.LogProofTaskID, Interval: proofs.Interval(), Run: proofs.RunTask}); err != nil {
		return nil, err
	}
	c.logger.Info("anchors are witnessed", "max_witness_delay", cfg.MaxWitnessDelay, "grace_period", cfg.GracePeriod)
	return w, nil
}

// witnessing makes this domain a witness of the domains that invited it, whatever its own
// backend: their Offers are answered with an Accept carrying our proof.
func (c *core) witnessing(ctx context.Context, svc *federation.Service) error {
	cfg, err := c.witnessConfig(ctx, svc, "witness-signer")
	if err != nil {
		return err
	}
	var appendLog witness.AppendFunc
	if l := c.witnessLog; l != nil {
		cfg.LogOrigin = l.Origin()
		appendLog = func(ctx context.Context, entry []byte) (uint64, error) {
			if failpoint.Err(failpoint.WitnessSkipLogAppend) != nil {
				cp, err := l.Checkpoint(ctx)
				return cp.Size, err
			}
			idx, err := l.Append(ctx, entry)
			if err != nil {
				return 0, err
			}
			// The origin counts a logged proof under LogRequired only once it has verified the
			// entry in our log: answering once a published checkpoint covers it lets the origin
			// verify it on arrival instead of at its proof monitor's next run. Bounded, and
			// outside the Accept's transaction; on timeout the Accept goes anyway and the
			// origin's monitor verifies the entry later.
			wctx, cancel := context.WithTimeout(ctx, checkpointWait)
			defer cancel()
			if _, err := l.AwaitCheckpoint(wctx, idx); err != nil && ctx.Err() == nil {
				c.logger.Warn("no checkpoint covers the logged credential yet; answering without it", "index", idx, "err", err)
			}
			return idx, nil
		}
	}
	signer, err := witness.NewSigner(cfg, c.st, svc.PostTx, svc.IsWitnessing, appendLog)
	if err != nil {
		return err
	}
	adapt := func(f func(context.Context, witness.Inbound) error) federation.HandlerFunc {
		return func(ctx context.Context, in federation.Inbound) error {
			return witnessError(f(ctx, witness.Inbound{Activity: in.Activity, Actor: in.Actor}))
		}
	}
	if err := svc.RegisterHandler(activity.TypeOffer, federation.Handler{
		Authorize: adapt(signer.AuthorizeOffer), Handle: adapt(signer.HandleOffer),
	}); err != nil {
		return err
	}
	c.routes = append(c.routes, c.credentialRoutes(svc.Endpoint()))
	return nil
}

// witnessError maps witnessing errors to the inbox's: the peer's faults are refused (403 or
// 400 at the inbox) or parked at once; anything else is retried.
func witnessError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, witness.ErrForbidden):
		return federation.Permanent(errors.Join(federation.ErrForbidden, err))
	case errors.Is(err, witness.ErrInvalid), errors.Is(err, relay.ErrInvalid), errors.Is(err, vc.ErrInvalidProof), errors.Is(err, vc.ErrUnsupportedProof):
		return federation.Permanent(errors.Join(activity.ErrInvalid, err))
	}
	return err
}

// credentialRoutes serves GET /vc/{id}: the credential of one of this domain's witnessed
// anchors with every proof collected so far (Orb's route).
func (c *core) credentialRoutes(endpoint string) func(mux httpapi.Router) {
	return func(mux httpapi.Router) {
		mux.HandleFunc("GET /vc/{id}", func(w http.ResponseWriter, r *http.Request) {
			id := r.PathValue("id")
			if id == "" || len(id) > 128 || strings.ContainsAny(id, "/?#") {
				httpapi.WriteError(w, http.StatusBadRequest, "invalid_id", "credential id must be one path segment")
				return
			}
			wa, err := c.st.WitnessAnchorByVCID(r.Context(), endpoint+"/vc/"+id)
			if errors.Is(err, store.ErrNotFound) {
				httpapi.WriteError(w, http.StatusNotFound, "not_found", "no such credential")
				return
			}
			if err != nil {
				httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", "credential could not be read")
				return
			}
			cred, err := witness.Credential(r.Context(), c.st, wa)
			if err != nil {
				httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", "credential could not be read")
				return
			}
			body, err := json.Marshal(cred)
			if err != nil {
				httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", "credential could not be encoded")
				return
			}
			w.Header().Set("Content-Type", activity.MediaTypeJSONLD)
			_, _ = w.Write(body)
		})
	}
}

// witnessLogs remembers which of our witnesses keep a log we can read (LogRequired counts only
// those). The witness backend asks inside the batch's transaction, where no request to another
// domain may be made, so the answers are read outside it: for a witness, as its Accept of our
// invitation is handled (learn), and for all of them every interval; a witness not read yet, or
// whose WebFinger could not be read, counts as without a log.
type witnessLogs struct {
	svc      *federation.Service
	interval time.Duration
	logger   *slog.Logger

	mu  sync.RWMutex
	has map[string]bool
	// learned holds the generation at which learn read a witness, so that a refresh that
	// listed the witnesses before it was accepted does not forget it.
	learned map[string]uint64
	gen     uint64
}

func (w *witnessLogs) hasLog(actor string) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.has[actor]
}

// learn reads whether a witness that has just accepted our invitation keeps a log. Without it
// the first anchors after an invitation would find the witness without a log until the next
// refresh, and, under LogRequired, wait for the status monitor.
func (w *witnessLogs) learn(ctx context.Context, actor string) {
	_, ok, err := w.svc.PeerLog(ctx, actor)
	if err != nil {
		w.logger.WarnContext(ctx, "read the witness log of a new witness; read again within the interval", "actor", actor, "error", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	w.has[actor] = ok
	w.learned[actor] = w.gen
}

// Run refreshes the answers until ctx is done.
func (w *witnessLogs) Run(ctx context.Context) error {
	for {
		if err := w.runOnce(ctx); err != nil && ctx.Err() == nil {
			w.logger.WarnContext(ctx, "read the witness logs of our witnesses", "error", err)
		}
		if !loop.Sleep(ctx, w.interval) {
			return nil
		}
	}
}

func (w *witnessLogs) runOnce(ctx context.Context) error {
	w.mu.RLock()
	start := w.gen
	w.mu.RUnlock()
	actors, err := w.svc.Witnesses(ctx)
	if err != nil {
		return err
	}
	has := make(map[string]bool, len(actors))
	var errs []error
	for _, a := range actors {
		_, ok, err := w.svc.PeerLog(ctx, a)
		if err != nil {
			ok = w.hasLog(a) // keep what was known
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
		}
		has[a] = ok
	}
	w.mu.Lock()
	for a, gen := range w.learned {
		if _, listed := has[a]; !listed && gen > start {
			has[a] = w.has[a] // accepted after the list was read
			continue
		}
		delete(w.learned, a)
	}
	w.has = has
	w.mu.Unlock()
	return errors.Join(errs...)
}
