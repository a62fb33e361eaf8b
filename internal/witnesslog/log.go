package witnesslog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/testsignal"
)

// Errors of Append.
var (
	// ErrClosed: the log is closed (or closing) and takes no more entries.
	ErrClosed = errors.New("witnesslog: the log is closed")
	// ErrEntrySize: the entry is empty or larger than Config.EntryMaxSize.
	ErrEntrySize = errors.New("witnesslog: entry is empty or too large")
)

// awaitPollInterval is how often AwaitCheckpoint reads the published checkpoint.
const awaitPollInterval = 50 * time.Millisecond

// Log is a domain's witness log: an append-only Merkle log on tessera whose checkpoints the
// domain key signs. It is safe for concurrent use.
type Log struct {
	cfg      Config
	backend  string
	verifier note.Verifier
	appender *tessera.Appender
	reader   tessera.LogReader
	// cancel ends tessera's background work (batch sequencing, checkpoint publishing).
	cancel  context.CancelFunc
	closeDB func() error
	logger  *slog.Logger
	m       *metrics
	// cosigning is set under a witness policy: the served checkpoint is then the cosigned one.
	cosigning *cosigning

	mu     sync.Mutex
	closed bool
	// inflight counts the goroutines that wait for an append's index; Close waits for them
	// before it stops tessera, so every future is resolved by its sequencer.
	inflight sync.WaitGroup
	// returned is 1 + the highest index assigned to an Append (0: none), for Close to wait on.
	returned atomic.Uint64

	testSignals struct {
		queued testsignal.Signal[struct{}] // an Append handed its entry to tessera
	}
}

// OpenPOSIX opens (or creates) the log stored in the directory dir with tessera's POSIX
// storage: the embedded deployment. One process at a time may append to a directory.
//
// The log is the domain's alone, like the rest of the data directory: dir is created 0700, and
// what an earlier version left readable is tightened (directories 0700, files 0600) before and
// after tessera opens it. tessera's driver creates its files 0644 and directories 0755 as it
// goes; the daemon's umask (077) is what keeps those private (daemon.Run).
func OpenPOSIX(ctx context.Context, cfg Config, dir string) (*Log, error) {
	if dir == "" {
		return nil, errors.New("open witness log: no directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open witness log in %s: %w", dir, err)
	}
	if err := restrict(dir); err != nil {
		return nil, fmt.Errorf("open witness log in %s: %w", dir, err)
	}
	drv, err := posix.New(ctx, posix.Config{Path: dir})
	if err != nil {
		return nil, fmt.Errorf("open witness log in %s: %w", dir, err)
	}
	if err := restrict(dir); err != nil {
		return nil, fmt.Errorf("open witness log in %s: %w", dir, err)
	}
	return open(ctx, cfg, drv, "posix", nil, posixCosigned{dir: dir})
}

// restrict makes every directory under root (root included) 0700 and every file 0600, where
// they allow more. Symbolic links are left alone: tessera makes none, and a chmod would follow one.
func restrict(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			return nil
		case d.IsDir():
			want = 0o700
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&^want != 0 {
			return os.Chmod(path, info.Mode().Perm()&want)
		}
		return nil
	})
}

func open(ctx context.Context, cfg Config, drv tessera.Driver, backend string, closeDB func() error, cosigned cosignedStore) (_ *Log, err error) {
	defer func() {
		if err != nil && closeDB != nil {
			err = errors.Join(err, closeDB())
		}
	}()
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	sig, err := newSigner(cfg.Origin, cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("open witness log: %w", err)
	}
	v, err := newVerifier(cfg.Origin, cfg.Key.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, fmt.Errorf("open witness log: %w", err)
	}
	opts := tessera.NewAppendOptions().
		WithCheckpointSigner(sig).
		WithBatching(cfg.BatchMaxSize, cfg.BatchMaxAge).
		WithCheckpointInterval(cfg.CheckpointInterval)
	// tessera's background work lives until Close, not until the caller's context ends.
	bg, cancel := context.WithCancel(context.WithoutCancel(ctx))
	// tessera's shutdown function is not used: Close gates appends itself, and waits for a
	// checkpoint covering what it returned (tessera's skips the wait when only index 0 was
	// assigned).
	a, _, r, err := tessera.NewAppender(bg, drv, opts)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open witness log (%s): %w", backend, err)
	}
	l := &Log{
		cfg: cfg, backend: backend, verifier: v, appender: a, reader: r,
		cancel: cancel, closeDB: closeDB,
		logger: cfg.Logger.With("origin", cfg.Origin, "backend", backend),
	}
	if l.m, err = newMetrics(cfg.Registerer, r); err != nil {
		cancel()
		return nil, err
	}
	if cfg.Witnessing != nil {
		if l.cosigning, err = newCosigning(l, *cfg.Witnessing, cosigned); err != nil {
			cancel()
			return nil, fmt.Errorf("open witness log: %w", err)
		}
	}
	l.logger.Info("witness log open")
	return l, nil
}

// Origin returns the log's origin: the first line of its checkpoints.
func (l *Log) Origin() string { return l.cfg.Origin }

type appendResult struct {
	index tessera.Index
	err   error
}

// Append adds entry to the log and returns its index once the entry is sequenced, integrated
// into the tree and durable (see the package documentation): the index is final, and a
// checkpoint that covers it is published within about Config.CheckpointInterval.
//
// When ctx ends first, Append returns its error, but the entry may still be integrated. An
// entry appended twice is in the log twice, at two indices.
func (l *Log) Append(ctx context.Context, entry []byte) (uint64, error) {
	if len(entry) == 0 || len(entry) > l.cfg.EntryMaxSize {
		return 0, fmt.Errorf("append to witness log: %w (%d bytes, at most %d)", ErrEntrySize, len(entry), l.cfg.EntryMaxSize)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, fmt.Errorf("append to witness log: %w", ErrClosed)
	}
	l.inflight.Add(1)
	l.mu.Unlock()

	start := time.Now()
	// The entry is copied: tessera keeps it until its batch is written, after Append may
	// have returned on ctx.
	future := l.appender.Add(ctx, tessera.NewEntry(bytes.Clone(entry)))
	l.testSignals.queued.Signal(struct{}{})
	done := make(chan appendResult, 1)
	go func() {
		defer l.inflight.Done()
		i, err := future()
		if err == nil {
			// Recorded before Done, so that Close, once the appends are over, knows them all.
			for n := l.returned.Load(); n <= i.Index && !l.returned.CompareAndSwap(n, i.Index+1); {
				n = l.returned.Load()
			}
		}
		done <- appendResult{index: i, err: err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			l.m.failures.Inc()
			return 0, fmt.Errorf("append to witness log: %w", res.err)
		}
		l.m.appends.Inc()
		l.m.duration.Observe(time.Since(start).Seconds())
		return res.index.Index, nil
	case <-ctx.Done():
		l.m.failures.Inc()
		return 0, fmt.Errorf("append to witness log: %w (the entry may still be integrated)", ctx.Err())
	}
}

// Checkpoint returns the log's latest served checkpoint (the cosigned one under a witness
// policy), verified with the log's own key.
func (l *Log) Checkpoint(ctx context.Context) (Checkpoint, error) {
	return l.checkpoint(ctx, l.servedCheckpoint)
}

func (l *Log) checkpoint(ctx context.Context, read func(context.Context) ([]byte, error)) (Checkpoint, error) {
	raw, err := read(ctx)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("read witness log checkpoint: %w", err)
	}
	return openCheckpoint(raw, l.cfg.Origin, l.verifier)
}

// AwaitCheckpoint waits until a served checkpoint (cosigned, under a witness policy) covers
// the entry at index and returns it.
func (l *Log) AwaitCheckpoint(ctx context.Context, index uint64) (Checkpoint, error) {
	return l.await(ctx, index, l.servedCheckpoint)
}

func (l *Log) await(ctx context.Context, index uint64, read func(context.Context) ([]byte, error)) (Checkpoint, error) {
	t := time.NewTicker(awaitPollInterval)
	defer t.Stop()
	for {
		cp, err := l.checkpoint(ctx, read)
		switch {
		case err == nil && cp.Size > index:
			return cp, nil
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return Checkpoint{}, fmt.Errorf("await checkpoint covering %d: %w", index, err)
		}
		select {
		case <-ctx.Done():
			return Checkpoint{}, fmt.Errorf("await checkpoint covering %d: %w", index, ctx.Err())
		case <-t.C:
		}
	}
}

// Close stops taking entries, waits for the appends under way, and for a published checkpoint
// covering every index this Log returned (bounded by ctx), then stops tessera's background work
// and closes the database. Entries whose Append returned an index are durable whether or not
// that checkpoint was published: the next writer of the log publishes it.
//
// tessera's goroutines end shortly after Close returns, not before: a test that reopens a
// POSIX directory at once may see the old publisher write one more (valid) checkpoint.
func (l *Log) Close(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()

	var errs []error
	waited := make(chan struct{})
	go func() {
		l.inflight.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		if n := l.returned.Load(); n > 0 {
			// The storage's own checkpoint: the witnesses are not asked on the way out.
			if _, err := l.await(ctx, n-1, l.reader.ReadCheckpoint); err != nil {
				errs = append(errs, fmt.Errorf("close witness log: publish the last checkpoint: %w", err))
			}
		}
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("close witness log: appends under way: %w", ctx.Err()))
	}
	// Cancelling fails the batch being written, which resolves its futures. When ctx ended
	// first, entries still queued behind it are never written and their Append calls return
	// on their own contexts.
	l.cancel()
	if l.closeDB != nil {
		if err := l.closeDB(); err != nil {
			errs = append(errs, fmt.Errorf("close witness log: %w", err))
		}
	}
	l.logger.Info("witness log closed")
	return errors.Join(errs...)
}
