package sqlitestore

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// walSync makes committed transactions durable outside SQLite's write lock.
//
// With synchronous=FULL, SQLite fsyncs the WAL inside each commit, while the transaction still
// holds the database's only write lock: every other transaction of the process (intake's queue
// commits, the batch writer's anchor, the observer's index slices) waits for the disk, and so
// does the CPU. On the development machine an fsync takes 2.5-3.5 ms, and a loaded server spent
// that long per commit with both cores partly idle. InTx therefore commits with
// synchronous=NORMAL (the frames are written to the WAL, not synced) and then, after the lock is
// released, waits here until an fdatasync of the WAL that began after its commit has returned.
// One fdatasync covers every commit before it, so concurrent transactions share them, and the
// next transaction runs while the disk works. A transaction is durable when InTx returns, as
// before; what changes is that, for the length of one fsync, another connection may read a
// commit that a power loss would still undo. Whatever leaves the process (an answer to a client,
// an anchor submitted, an activity delivered) is sent by InTx's caller after it returns. The WAL
// keeps frames in commit order, so a later transaction is never durable without an earlier one.
type walSync struct {
	path string

	// requested counts the commits that asked for a sync; synced is the count that the last
	// completed fdatasync covers. Both only grow.
	requested atomic.Uint64
	mu        sync.Mutex // held during an fdatasync, so that concurrent callers share it
	synced    uint64
	f         *os.File // opened at the first sync: the WAL exists once a transaction committed

	syncs, waits prometheus.Counter
}

func newWALSync(dbPath string, reg prometheus.Registerer) (*walSync, error) {
	w := &walSync{
		path: dbPath + "-wal",
		syncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_sqlite_wal_syncs_total",
			Help: "fdatasyncs of the WAL made outside the write lock after transactions committed.",
		}),
		waits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "anchord_sqlite_wal_sync_waits_total",
			Help: "Transactions that waited for an fdatasync of the WAL; over anchord_sqlite_wal_syncs_total, the transactions each one covered.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{w.syncs, w.waits} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register WAL sync metrics: %w", err)
			}
		}
	}
	return w, nil
}

// sync returns once every transaction committed before the call is on disk.
func (w *walSync) sync() error {
	ticket := w.requested.Add(1)
	w.waits.Inc()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.synced >= ticket {
		return nil // an fdatasync that began after this commit has completed
	}
	covered := w.requested.Load() // each of these committed before the fdatasync below begins
	if err := w.open(); err != nil {
		return err
	}
	start := time.Now()
	if err := unix.Fdatasync(int(w.f.Fd())); err != nil {
		return fmt.Errorf("sync WAL after %s: %w", time.Since(start), err)
	}
	w.syncs.Inc()
	w.synced = covered
	return nil
}

// open opens the WAL file, again if SQLite has replaced it since (it deletes the WAL when the
// last connection closes, which the writer's connection, held for good, normally prevents).
func (w *walSync) open() error {
	if w.f != nil {
		held, err1 := w.f.Stat()
		now, err2 := os.Stat(w.path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return nil
		}
		_ = w.f.Close()
		w.f = nil
	}
	f, err := os.OpenFile(w.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sync WAL: %w", err)
	}
	w.f = f
	return nil
}

// close closes the WAL file, if it was opened.
func (w *walSync) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}
