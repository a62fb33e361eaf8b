package cosigner

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/loop"
)

// RefreshIntervalDefault is how often KnownLogs asks again which domains' logs it follows.
const RefreshIntervalDefault = time.Minute

// Log is a log the witness cosigns: its origin and the key its checkpoints are signed with.
type Log struct {
	Origin string
	// Key is the log's Ed25519 key (another anchord domain's domain key).
	Key ed25519.PublicKey
}

// ListFunc lists the logs added automatically: those of the domains this one follows, that
// witness for it, or that it witnesses for. It is called by KnownLogs.Run, never while a request is served.
type ListFunc func(ctx context.Context) ([]Log, error)

// KnownLogsConfig configures KnownLogs.
type KnownLogsConfig struct {
	// Static is the configured logs, one signed-note verifier key per entry, whose key name is
	// the log's origin.
	Static []string
	// List adds logs found at run time; nil: only Static.
	List            ListFunc
	RefreshInterval time.Duration
	Logger          *slog.Logger
}

// KnownLogs is the witness's list of logs and their keys: the configured ones, and those List
// returns, refreshed by Run. Lookups read memory only, so an add-checkpoint request never makes
// this domain fetch anything.
type KnownLogs struct {
	cfg     KnownLogsConfig
	static  map[string][]note.Verifier
	dynamic atomic.Pointer[map[string][]note.Verifier]
}

// NewKnownLogs parses the configured keys.
func NewKnownLogs(cfg KnownLogsConfig) (*KnownLogs, error) {
	cfg.RefreshInterval = cmp.Or(cfg.RefreshInterval, RefreshIntervalDefault)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	k := &KnownLogs{cfg: cfg, static: map[string][]note.Verifier{}}
	for _, vk := range cfg.Static {
		v, err := fnote.NewVerifier(vk)
		if err != nil {
			return nil, fmt.Errorf("known log key %q: %w", vk, err)
		}
		if !validName(v.Name()) {
			return nil, fmt.Errorf("known log key %q: the key name is not an origin", vk)
		}
		k.static[v.Name()] = append(k.static[v.Name()], v)
	}
	empty := map[string][]note.Verifier{}
	k.dynamic.Store(&empty)
	return k, nil
}

// ParseKnownLogs reads a known-logs file: one verifier key per line; blank lines and lines
// starting with '#' are ignored.
func ParseKnownLogs(b []byte) ([]string, error) {
	var keys []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		keys = append(keys, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read known logs: %w", err)
	}
	return keys, nil
}

// Verifiers returns the verifiers of origin's checkpoints; ok is false for an unknown log.
func (k *KnownLogs) Verifiers(origin string) (note.Verifiers, bool) {
	vs := append(append([]note.Verifier(nil), k.static[origin]...), (*k.dynamic.Load())[origin]...)
	if len(vs) == 0 {
		return nil, false
	}
	return note.VerifierList(vs...), true
}

// Len is how many logs are known.
func (k *KnownLogs) Len() int {
	all := maps.Clone(k.static)
	maps.Copy(all, *k.dynamic.Load())
	return len(all)
}

// Run refreshes the automatically added logs every RefreshInterval until ctx ends. A failed
// refresh keeps the logs known before.
func (k *KnownLogs) Run(ctx context.Context) error {
	if k.cfg.List == nil {
		return nil
	}
	loop.Every(ctx, k.cfg.RefreshInterval, func(ctx context.Context) {
		if err := k.runOnce(ctx); err != nil && ctx.Err() == nil {
			k.cfg.Logger.WarnContext(ctx, "refresh the logs this witness cosigns", "error", err)
		}
	})
	return nil
}

func (k *KnownLogs) runOnce(ctx context.Context) error {
	logs, err := k.cfg.List(ctx)
	if err != nil {
		return err
	}
	m := map[string][]note.Verifier{}
	var errs []error
	for _, l := range logs {
		vk, err := note.NewEd25519VerifierKey(l.Origin, l.Key)
		if err != nil {
			errs = append(errs, fmt.Errorf("log %s: %w", l.Origin, err))
			continue
		}
		v, err := note.NewVerifier(vk)
		if err != nil {
			errs = append(errs, fmt.Errorf("log %s: %w", l.Origin, err))
			continue
		}
		m[l.Origin] = append(m[l.Origin], v)
	}
	k.dynamic.Store(&m)
	return errors.Join(errs...)
}
