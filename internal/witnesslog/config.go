package witnesslog

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config.
const (
	// BatchMaxAgeDefault is how long the first entry of a batch waits for others before the
	// batch is sequenced. The witness appends before it answers, so this is added to every
	// Accept; tessera's own default (250 ms) suits logs that nobody waits on. Measured against
	// 2 and 10 ms (docs/design/witness-log.md): 2 ms makes batches too small under load, 10 ms
	// only adds latency.
	BatchMaxAgeDefault = 5 * time.Millisecond
	// BatchMaxSizeDefault sequences a batch at once when it holds this many entries: one entry
	// bundle.
	BatchMaxSizeDefault = 256
	// CheckpointIntervalDefault is how often a new checkpoint is signed and published when the
	// tree has grown. An appended entry is covered by a published checkpoint within about this
	// long; one second is the least the MariaDB backend accepts.
	CheckpointIntervalDefault = time.Second
	// EntryMaxSizeDefault bounds an entry (a VC). A full entry bundle holds 256 entries and is
	// one row in the MariaDB backend, so 256 × 32 KiB stays under the server's default
	// max_allowed_packet (16 MiB).
	EntryMaxSizeDefault = 32 << 10
	// EntryMaxSizeLimit is the most the tlog-tiles entry bundle format can carry: an entry's
	// length is two bytes.
	EntryMaxSizeLimit = 1<<16 - 1
)

// Config configures a Log.
type Config struct {
	// Origin names the log in its checkpoints and is the name of its verifier key; see
	// OriginFor. Required.
	Origin string
	// Key signs the checkpoints: the domain key, whose public half is the actor's publicKey.
	// Required.
	Key ed25519.PrivateKey

	BatchMaxAge        time.Duration
	BatchMaxSize       uint
	CheckpointInterval time.Duration
	// EntryMaxSize bounds what Append accepts; at most EntryMaxSizeLimit.
	EntryMaxSize int
	// Witnessing, when set, has every checkpoint cosigned by witnesses before it is served.
	Witnessing *WitnessingConfig

	// Logger receives the log's lines; the caller gives it its component attribute (a second
	// one would be a duplicate key in a JSON line).
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.BatchMaxAge = cmp.Or(c.BatchMaxAge, BatchMaxAgeDefault)
	c.BatchMaxSize = cmp.Or(c.BatchMaxSize, BatchMaxSizeDefault)
	c.CheckpointInterval = cmp.Or(c.CheckpointInterval, CheckpointIntervalDefault)
	c.EntryMaxSize = cmp.Or(c.EntryMaxSize, EntryMaxSizeDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c
}

func (c Config) validate() error {
	if err := validOrigin(c.Origin); err != nil {
		return err
	}
	if len(c.Key) != ed25519.PrivateKeySize {
		return fmt.Errorf("witnesslog: the key must be an Ed25519 private key of %d bytes, got %d", ed25519.PrivateKeySize, len(c.Key))
	}
	if c.BatchMaxAge < 0 || c.CheckpointInterval < 0 {
		return errors.New("witnesslog: batch max age and checkpoint interval must not be negative")
	}
	if c.EntryMaxSize < 0 || c.EntryMaxSize > EntryMaxSizeLimit {
		return fmt.Errorf("witnesslog: entry max size must be between 1 and %d bytes", EntryMaxSizeLimit)
	}
	return nil
}
