package witness

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// Defaults, Orb's server defaults where Orb has the setting.
const (
	// MaxWitnessDelayDefault is --max-witness-delay: how long an Offer is good for (its
	// endTime), and with the grace period how long an anchor may wait for proofs before it
	// fails.
	MaxWitnessDelayDefault = 10 * time.Minute
	// GracePeriodDefault is --anchor-status-in-process-grace-period: how long after an Offer
	// the monitor first looks at the anchor, and between its looks.
	GracePeriodDefault = time.Minute
	// MonitorIntervalDefault is --anchor-status-monitoring-interval.
	MonitorIntervalDefault = 10 * time.Second
	// MaxRecordsDefault is --anchor-status-max-records: anchors looked at per monitor run.
	MaxRecordsDefault = 500
	// MaxClockSkewDefault bounds how far a proof's created time may be outside its window.
	MaxClockSkewDefault = time.Minute
)

// MonitorTaskID is the anchor status monitor's task (Orb's name).
const MonitorTaskID = "anchor-status-monitor"

// Identity is this domain as an origin and as a witness.
type Identity struct {
	ActorIRI string
	// Endpoint is the external endpoint: credential ids and CAS links are below it, and it is
	// the domain of this domain's proofs.
	Endpoint string
	// DID is the domain's did:web, the issuer of its credentials and the controller of Key.
	DID string
	Key ed25519.PrivateKey
}

func (id Identity) verificationMethod() string {
	return id.DID + "#" + vc.KeyID(id.Key.Public().(ed25519.PublicKey))
}

// PostTxFunc posts an activity through the durable outbox inside tx and returns its id.
type PostTxFunc func(ctx context.Context, tx store.Executor, a *activity.Activity, exclude ...string) (string, error)

// KeysFunc returns the key resolver of proofs by actor: keys of the did:web on the actor's own
// host. An error wrapping ErrInvalid means the proof can never verify.
type KeysFunc func(actor string) (vc.ResolveKeyFunc, error)

// RequeueFunc gives the operations of failed anchor a back to the queue inside tx.
type RequeueFunc func(ctx context.Context, tx store.Executor, a store.Anchor) error

// HasLogFunc reports whether actor keeps a witness log we can read (a cached answer: it is
// called inside transactions and must not do I/O).
type HasLogFunc func(actor string) bool

// ErrInvalid marks a peer's activity that can never be handled (parked at once).
var ErrInvalid = errors.New("invalid witnessing activity")

// ErrForbidden marks an activity from an actor that may not send it.
var ErrForbidden = errors.New("forbidden")

// Config configures the origin side (Witnessing) and the witness side (Signer).
type Config struct {
	Identity Identity
	// MediaType of the anchor link's data URIs; activity.MediaTypeGzipBase64 by default.
	MediaType       string
	MaxWitnessDelay time.Duration
	GracePeriod     time.Duration
	MonitorInterval time.Duration
	MaxRecords      int
	MaxClockSkew    time.Duration
	// HasLog tells which witnesses keep a log (LogRequired); nil: none does.
	HasLog HasLogFunc
	// LogOrigin is the origin of this domain's witness log, which the witness names in its
	// receipts with the index of each credential it logged; empty without a log.
	LogOrigin  string
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() (Config, error) {
	if c.Identity.ActorIRI == "" || c.Identity.Endpoint == "" || c.Identity.DID == "" || len(c.Identity.Key) != ed25519.PrivateKeySize {
		return c, errors.New("witness config: identity incomplete")
	}
	c.MediaType = cmp.Or(c.MediaType, activity.MediaTypeGzipBase64)
	c.MaxWitnessDelay = cmp.Or(c.MaxWitnessDelay, MaxWitnessDelayDefault)
	c.GracePeriod = cmp.Or(c.GracePeriod, GracePeriodDefault)
	c.MonitorInterval = cmp.Or(c.MonitorInterval, MonitorIntervalDefault)
	c.MaxRecords = cmp.Or(c.MaxRecords, MaxRecordsDefault)
	c.MaxClockSkew = cmp.Or(c.MaxClockSkew, MaxClockSkewDefault)
	if c.MaxWitnessDelay < 0 || c.GracePeriod < 0 || c.MonitorInterval < 0 || c.MaxRecords < 0 || c.MaxClockSkew < 0 {
		return c, fmt.Errorf("witness config: negative duration or count")
	}
	if c.HasLog == nil {
		c.HasLog = func(string) bool { return false }
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c, nil
}
