package daemon

import (
	"context"
	"crypto/ed25519"
	"fmt"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/ledger/splinter"
	"github.com/anchord/anchord/internal/submitter"
	"github.com/anchord/anchord/internal/taskmgr"
	"github.com/anchord/anchord/internal/trust"
)

// ledgerStatusTask is the task id of the ledger status poller.
const ledgerStatusTask = "ledger-status-poll"

// anchorBackend builds the configured anchoring backend. giveBack is the queue that takes the
// operations of a failed anchor back; svc is the domain's ActivityPub service, which the
// witness backend offers anchors through.
func (c *core) anchorBackend(ctx context.Context, giveBack anchor.GiveBackTxFunc, svc *federation.Service) (anchor.Backend, error) {
	switch c.cfg.AnchorBackend {
	case "ledger":
		return c.ledgerBackend(ctx, giveBack)
	case "witness":
		return c.witnessBackend(ctx, svc, giveBack)
	default:
		key, err := c.domainKey(ctx)
		if err != nil {
			return nil, err
		}
		return anchor.NewLocal(key), nil
	}
}

// domainKey is the domain's Ed25519 signing key: from --key-file, or created at first start and
// kept in the store.
func (c *core) domainKey(ctx context.Context) (ed25519.PrivateKey, error) {
	if c.cfg.KeyFile != "" {
		return anchor.LoadDomainKeyFile(c.cfg.KeyFile)
	}
	return anchor.LoadOrCreateDomainKey(ctx, c.st)
}

// ledgerKey is the ledger signing key: from --ledger-key-file, or created at first start and
// kept in the store.
func (c *core) ledgerKey(ctx context.Context) (string, error) {
	if c.cfg.LedgerKeyFile != "" {
		return anchor.LoadLedgerKeyFile(c.cfg.LedgerKeyFile)
	}
	return anchor.LoadOrCreateLedgerKey(ctx, c.st)
}

// ledgerBackend builds the ledger anchoring backend — batches signed with the domain's ledger key
// (created at first start and kept in the store) — and registers the batch submitter (writers
// stage: it stops after intake and relinquishes its claims) and the status poller task.
func (c *core) ledgerBackend(ctx context.Context, giveBack anchor.GiveBackTxFunc) (*anchor.Ledger, error) {
	key, err := c.ledgerKey(ctx)
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
	c.logger.Info("ledger signer", "public_key", signer.PublicKey())
	client, err := c.ledgerClient()
	if err != nil {
		return nil, fmt.Errorf("--ledger-url: %w", err)
	}
	cfg := c.cfg
	requeue := submitter.RequeueFunc(anchor.RequeueFunc(anchor.RequeueConfig{
		Profile: c.profile, Limits: c.limits, FetchFunc: c.cas.FetchFunc, GiveBackTxFunc: giveBack,
	}))
	sub, err := submitter.New(submitter.Config{
		InstanceID: c.instanceID, RequeueFunc: requeue, Interval: cfg.SubmitterInterval, ClaimLimit: cfg.SubmitterClaimLimit,
		ClaimTTL: cfg.SubmitterClaimTTL, Concurrency: cfg.SubmitterConcurrency, RequestTimeout: cfg.LedgerRequestTimeout,
		MaxAttempts: cfg.SubmitterMaxAttempts, BackoffInitial: cfg.SubmitterBackoffInitial,
		BackoffMultiplier: cfg.SubmitterBackoffMultiplier, BackoffMax: cfg.SubmitterBackoffMax,
		Logger: c.log("submitter"), Registerer: c.reg,
	}, c.st, client)
	if err != nil {
		return nil, err
	}
	poller, err := submitter.NewPoller(submitter.PollerConfig{
		RequeueFunc: requeue, Interval: cfg.LedgerStatusPollInterval, PageSize: cfg.LedgerStatusPageSize,
		UnknownGrace: cfg.LedgerUnknownGrace, RequestTimeout: cfg.LedgerRequestTimeout,
		Logger: c.log("ledger-poller"), Registerer: c.reg,
	}, c.st, client)
	if err != nil {
		return nil, err
	}
	if err := c.tasks.Register(taskmgr.Task{ID: ledgerStatusTask, Interval: cfg.LedgerStatusPollInterval, Run: poller.RunTask}); err != nil {
		return nil, err
	}
	c.sup.add(StageWriters, "submitter", sub.Run)
	return anchor.NewLedger(builder, anchor.LedgerConfig{ServiceID: cfg.LedgerServiceID})
}

// ledgerClient returns the client of the configured ledger REST dialect.
func (c *core) ledgerClient() (ledger.Client, error) {
	tlsConfig, err := trust.ClientConfig(c.cfg.TLSCAFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca-file: %w", err)
	}
	hc := sawtooth.NewHTTPClient(tlsConfig)
	switch c.cfg.LedgerAPI {
	case "splinter":
		return splinter.New(splinter.Config{URL: c.cfg.LedgerURL, Timeout: c.cfg.LedgerRequestTimeout, Authorization: c.cfg.LedgerAuthorization, HTTPClient: hc})
	default:
		return sawtooth.New(sawtooth.Config{URL: c.cfg.LedgerURL, Timeout: c.cfg.LedgerRequestTimeout, HTTPClient: hc})
	}
}
