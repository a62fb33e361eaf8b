package daemon

import (
	"context"
	"fmt"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/ledger/splinter"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/submitter"
	"github.com/anchord/anchord/internal/taskmgr"
)

// ledgerStatusTask is the task id of the ledger status poller.
const ledgerStatusTask = "ledger-status-poll"

// ledgerBackend builds the ledger anchoring backend: batches signed with the domain's ledger
// key (created at first start and kept in the store).
func ledgerBackend(ctx context.Context, w *wiring) (*anchor.Ledger, error) {
	key, err := anchor.LoadOrCreateLedgerKey(ctx, w.st)
	if err != nil {
		return nil, err
	}
	signer, err := sawtooth.NewSigner(key)
	if err != nil {
		return nil, fmt.Errorf("ledger signer: %w", err)
	}
	builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
	if err != nil {
		return nil, err
	}
	w.logger.Info("ledger signer", "public_key", signer.PublicKey())
	return anchor.NewLedger(builder, anchor.LedgerConfig{ServiceID: w.cfg.LedgerServiceID})
}

// ledgerClient returns the client of the configured ledger REST dialect.
func ledgerClient(w *wiring) (ledger.Client, error) {
	switch w.cfg.LedgerAPI {
	case "splinter":
		return splinter.New(splinter.Config{URL: w.cfg.LedgerURL, Timeout: w.cfg.LedgerRequestTimeout, Authorization: w.cfg.LedgerAuthorization})
	default:
		return sawtooth.New(sawtooth.Config{URL: w.cfg.LedgerURL, Timeout: w.cfg.LedgerRequestTimeout})
	}
}

// startSubmitters registers the batch submitter loop (writers stage: it stops after intake and
// relinquishes its claims) and the status poller task. Operations of anchors the ledger rejects
// are queued again as rows of queueOwner: this instance's queue picks them up, or — owned by an
// instance without a task entry — the op-queue monitor reposts them.
func startSubmitters(w *wiring, tasks *taskmgr.Manager, instanceID, queueOwner string, casStore *cas.Store, limits batchfile.Limits) error {
	client, err := ledgerClient(w)
	if err != nil {
		return fmt.Errorf("--ledger-url: %w", err)
	}
	requeue := submitter.RequeueFunc(anchor.RequeueFunc(anchor.RequeueConfig{
		Profile: w.cfg.SidetreeProfile(), Limits: limits, FetchFunc: casStore.FetchFunc,
		InstanceID: queueOwner, Lifespan: w.cfg.OpQueueOperationLifespan,
	}))
	cfg := w.cfg
	sub, err := submitter.New(submitter.Config{
		InstanceID: instanceID, RequeueFunc: requeue, Interval: cfg.SubmitterInterval, ClaimLimit: cfg.SubmitterClaimLimit,
		ClaimTTL: cfg.SubmitterClaimTTL, Concurrency: cfg.SubmitterConcurrency, RequestTimeout: cfg.LedgerRequestTimeout,
		MaxAttempts: cfg.SubmitterMaxAttempts, BackoffInitial: cfg.SubmitterBackoffInitial,
		BackoffMultiplier: cfg.SubmitterBackoffMultiplier, BackoffMax: cfg.SubmitterBackoffMax,
		Logger: w.log("submitter"), Registerer: w.reg,
	}, w.st, client)
	if err != nil {
		return err
	}
	poller, err := submitter.NewPoller(submitter.PollerConfig{
		RequeueFunc: requeue, Interval: cfg.LedgerStatusPollInterval, PageSize: cfg.LedgerStatusPageSize,
		UnknownGrace: cfg.LedgerUnknownGrace, RequestTimeout: cfg.LedgerRequestTimeout,
		Logger: w.log("ledger-poller"), Registerer: w.reg,
	}, w.st, client)
	if err != nil {
		return err
	}
	if err := tasks.Register(taskmgr.Task{ID: ledgerStatusTask, Interval: cfg.LedgerStatusPollInterval, Run: func(ctx context.Context, _ int64) error {
		// Every write of the poller is a compare-and-set on the batch's status, so a second
		// poller after a take-over cannot apply an outcome twice.
		_, err := poller.RunOnce(ctx)
		return err
	}}); err != nil {
		return err
	}
	w.sup.add(StageWriters, "submitter", sub.Run)
	return nil
}
