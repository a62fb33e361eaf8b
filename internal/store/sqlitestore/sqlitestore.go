// Package sqlitestore is the embedded store: SQLite through modernc.org/sqlite (pure Go), one
// database file under the data directory, in WAL mode with synchronous=FULL, so a committed
// transaction survives kill -9 and power loss.
//
// What it does worse than pgstore, by design of SQLite: one writer at a time (every InTx takes
// the write lock with BEGIN IMMEDIATE, so write transactions are serialised in this process and
// never fail with SQLITE_BUSY mid-way), no LISTEN/NOTIFY, and the "database clock" is this
// process's clock, which is fine because an embedded store has exactly one instance.
//
// Reads outside a transaction use a separate read-only pool, which WAL lets run beside the writer.
package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/anchord/anchord/internal/filemode"
	"github.com/anchord/anchord/internal/store"
)

//go:embed migration/*.sql
var migrationFS embed.FS

// FileName is the database file inside the data directory.
const FileName = "anchord.db"

// MaxReadersDefault bounds the read-only connection pool.
const MaxReadersDefault = 8

// SynchronousDefault is "full": an acknowledged operation survives power loss, not only a
// killed process. Group commit upstream keeps the fsync rate low.
const SynchronousDefault = "full"

// MmapSizeDefault is how much of the database file connections read through a memory map (1 GiB).
// Mapped pages count in the process's resident size as file pages the kernel can drop, not as
// anonymous memory.
const MmapSizeDefault = 1 << 30

// ReaderCacheSizeDefault is each read connection's page cache in bytes. Pages within the memory
// map are not copied into it, so it holds only pages past the map: on a database larger than
// the map, every reader fills its own. It is anonymous memory outside the Go runtime's soft
// limit, so the bound on all of them (PageCacheBound) is what RssAnon adds to that limit. At ten
// million DIDs, 64 MiB per reader made up to 512 MiB of it.
const ReaderCacheSizeDefault = 8 << 20

// The writer's and the checkpointer's page caches. The writer's hot pages (the queue's, the
// index's right edge) fit in 16 MiB; why it is not larger is in dsn. The checkpointer copies
// WAL frames into the file and keeps SQLite's default.
const (
	writerCacheSize       = 16 << 20
	checkpointerCacheSize = 2 << 20
)

// PageCacheBound is the most memory the page caches of a store opened with cfg hold: the
// writer's, the checkpointer's and every reader's.
func PageCacheBound(cfg Config) int64 {
	return writerCacheSize + checkpointerCacheSize +
		int64(cmp.Or(cfg.MaxReaders, MaxReadersDefault))*cmp.Or(cfg.ReaderCacheSize, ReaderCacheSizeDefault)
}

// Config configures Open.
type Config struct {
	// DataDir is created if missing; the database is DataDir/anchord.db.
	DataDir string
	// MaxReaders bounds the read pool; zero means MaxReadersDefault.
	MaxReaders int
	// Synchronous is SQLite's synchronous setting: "full" (default) fsyncs the WAL at every
	// commit, so a committed transaction survives power loss; "normal" fsyncs only at
	// checkpoints, so a committed transaction survives a killed process but the last ones may
	// be lost on power loss or an OS crash.
	Synchronous string
	// MmapSize bounds the bytes of the database file read through a memory map; beyond it
	// pages are read with pread into the page cache. Zero means MmapSizeDefault, negative off.
	MmapSize int64
	// ReaderCacheSize is each read connection's page cache in bytes; zero means
	// ReaderCacheSizeDefault.
	ReaderCacheSize int64
	// CheckpointInterval, when positive, is the period of a background Checkpointer (the daemon
	// passes CheckpointIntervalDefault). The writer checkpoints at commit, each time the WAL
	// passes 10,000 pages, except while the Checkpointer runs: before it starts (migrations, the
	// observer's catch-up) and without one, the WAL stays bounded.
	CheckpointInterval time.Duration
	Logger             *slog.Logger
	// Registerer receives the connection-pool metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// Store is the SQLite backend.
type Store struct {
	executor
	writer *sql.DB
	reader *sql.DB
	ckptDB *sql.DB // the Checkpointer's connection; nil without one
	ckpt   *Checkpointer
	// wal syncs the WAL after InTx's commits, outside the write lock (synchronous=full only).
	wal    *walSync
	path   string
	logger *slog.Logger
}

var _ store.Store = (*Store)(nil)

// Open creates or opens the database and applies pending migrations.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("open sqlite store: data directory is empty")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// The database holds the domain's signing key (unless it comes from a key file) and every
	// queued request: only the owner may read it. Existing files are tightened too (bits are
	// removed, never added: an operator's read-only 0500 stays).
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("open sqlite store: create data directory: %w", err)
	}
	if err := filemode.Tighten(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("open sqlite store: restrict data directory: %w", err)
	}
	path := filepath.Join(cfg.DataDir, FileName)
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}

	sync := cfg.Synchronous
	switch sync {
	case "":
		sync = SynchronousDefault
	case "full", "normal":
	default:
		return nil, fmt.Errorf("open sqlite store: synchronous must be full or normal, not %q", sync)
	}
	mmap := cfg.MmapSize
	switch {
	case mmap == 0:
		mmap = MmapSizeDefault
	case mmap < 0:
		mmap = 0
	}
	writer, err := sql.Open("sqlite", dsn(path, false, sync, mmap, writerCacheSize, false))
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	// One writer connection: SQLite admits one writer at a time anyway, and queueing in
	// database/sql is cheaper and fairer than spinning on SQLITE_BUSY.
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)

	reader, err := sql.Open("sqlite", dsn(path, true, sync, mmap, cmp.Or(cfg.ReaderCacheSize, ReaderCacheSizeDefault), false))
	if err != nil {
		_ = writer.Close()
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	maxReaders := cmp.Or(cfg.MaxReaders, MaxReadersDefault)
	reader.SetMaxOpenConns(maxReaders)
	reader.SetMaxIdleConns(maxReaders)

	s := &Store{writer: writer, reader: reader, path: path, logger: logger}
	s.executor = executor{w: writer, r: reader, layout: new(indexLayout)}
	if sync == "full" {
		if s.wal, err = newWALSync(path, cfg.Registerer); err != nil {
			s.Close()
			return nil, fmt.Errorf("open sqlite store: %w", err)
		}
	}
	if cfg.CheckpointInterval > 0 {
		// Its own connection: a checkpoint on the writer's would hold the write connection for
		// as long as it runs, which is what it is there to avoid.
		if s.ckptDB, err = sql.Open("sqlite", dsn(path, false, sync, mmap, checkpointerCacheSize, true)); err != nil {
			s.Close()
			return nil, fmt.Errorf("open sqlite store: %w", err)
		}
		s.ckptDB.SetMaxOpenConns(1)
		s.ckptDB.SetMaxIdleConns(1)
		s.ckptDB.SetConnMaxLifetime(0)
		if s.ckpt, err = newCheckpointer(s.ckptDB, writer, cfg.CheckpointInterval, logger, cfg.Registerer); err != nil {
			s.Close()
			return nil, fmt.Errorf("open sqlite store: %w", err)
		}
	}

	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	// Prepared once (database/sql then prepares it once per reader connection): the driver
	// prepares every query string afresh, and for resolution, a one-row indexed read, SQLite's
	// parsing and planning cost about as much as the read.
	// A database read through the suffix index gets the positions' statements too: Relayout
	// turns its reads over to them while it serves.
	prepare := map[**sql.Stmt]string{&s.didState: qDIDStateGet, &s.didPositions: qDIDPositions, &s.didOpAt: qDIDOperationAt}
	if s.layout.bySuffix.Load() {
		prepare[&s.didOps] = qDIDOperationList
	}
	for stmt, q := range prepare {
		if *stmt, err = reader.PrepareContext(ctx, q); err != nil {
			s.Close()
			return nil, fmt.Errorf("open sqlite store: prepare: %w", err)
		}
	}
	// SQLite creates the -wal and -shm files with the database's mode; tighten any that an
	// older version left readable.
	for _, f := range []string{path + "-wal", path + "-shm"} {
		if err := filemode.Tighten(f, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.Close()
			return nil, fmt.Errorf("open sqlite store: restrict %s: %w", filepath.Base(f), err)
		}
	}
	if cfg.Registerer != nil {
		c := newPoolCollector(map[string]*sql.DB{"writer": writer, "reader": reader})
		if err := cfg.Registerer.Register(c); err != nil {
			s.Close()
			return nil, fmt.Errorf("register sqlite pool metrics: %w", err)
		}
	}
	return s, nil
}

// createPrivate creates the database file with mode 0600 before SQLite opens it (SQLite would
// create it 0644), or tightens an existing one.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create database file: %w", err)
	}
	if err := filemode.Tighten(path, 0o600); err != nil {
		return fmt.Errorf("restrict database file: %w", err)
	}
	return nil
}

// dsn is the data source name of a connection to path with a page cache of cacheSize bytes.
// noAutoCheckpoint turns the commit-time checkpoint off (the Checkpointer's own connection; the
// writer's is turned off while it runs).
func dsn(path string, readOnly bool, synchronous string, mmapSize, cacheSize int64, noAutoCheckpoint bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+synchronous+")")
	q.Add("_pragma", "foreign_keys(ON)")
	// Reads through a memory map instead of one pread per page: the profile under load was
	// dominated by page-read syscalls.
	q.Add("_pragma", "mmap_size("+strconv.FormatInt(mmapSize, 10)+")")
	// The writer's cache is small on purpose. When a b-tree split swaps two new pages, SQLite
	// parks one under a page number past the end of the file, and the commit that follows then
	// walks the writer's whole page cache to drop it: with 64 MiB (16,384 pages) that walk was
	// 6-7 % of the CPU at 7,500 creates/s, paid by intake's small queue commits.
	// A negative cache_size is in KiB.
	q.Add("_pragma", "cache_size("+strconv.FormatInt(-max(cacheSize>>10, 1), 10)+")")
	// Checkpoint the WAL every ~40 MB instead of every 4 MB: pages rewritten by many commits
	// (the queue's hot pages) are copied to the database file once per checkpoint, not once per
	// 1,000 pages. Measured +5-8 % operations/s under load; the WAL file grows accordingly.
	if noAutoCheckpoint {
		q.Add("_pragma", "wal_autocheckpoint(0)")
	} else {
		q.Add("_pragma", "wal_autocheckpoint("+strconv.Itoa(walRestartFrames)+")")
	}
	q.Add("_time_format", "sqlite")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

// Backend implements store.Store.
func (s *Store) Backend() string { return "sqlite" }

// Path returns the database file.
func (s *Store) Path() string { return s.path }

// Ping implements store.Store.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.reader.PingContext(ctx); err != nil {
		return fmt.Errorf("ping sqlite: %w", err)
	}
	return nil
}

// Close implements store.Store.
func (s *Store) Close() {
	for _, stmt := range []*sql.Stmt{s.didOps, s.didState, s.didPositions, s.didOpAt} {
		if stmt != nil {
			_ = stmt.Close()
		}
	}
	_ = s.reader.Close()
	if s.ckptDB != nil {
		_ = s.ckptDB.Close()
	}
	// Checkpointing on close keeps the WAL file small between runs; a failure is harmless.
	_, _ = s.writer.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	_ = s.writer.Close()
	if s.wal != nil {
		s.wal.close()
	}
}

// InTx implements store.Store. The transaction starts with BEGIN IMMEDIATE (the writer DSN's
// _txlock), so it holds the write lock from the start. With synchronous=full it commits without
// syncing and syncs the WAL after the lock is released (walSync): it returns once the
// transaction is durable, as a commit with synchronous=FULL would.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
	if s.wal == nil {
		hooks, err := s.inTx(ctx, s.writer, fn)
		if err != nil {
			return err
		}
		hooks.Run()
		return nil
	}
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	// The setting is the connection's, and the writes made outside InTx on the same connection
	// keep synchronous=FULL: it is lowered for this transaction only.
	if _, err := conn.ExecContext(ctx, qSynchronousNormal); err != nil {
		_ = conn.Close()
		return fmt.Errorf("begin: %w", err)
	}
	hooks, err := s.inTx(ctx, conn, fn)
	switch {
	case err != nil && ctx.Err() != nil:
		// A cancelled context makes database/sql roll the transaction back from a goroutine of
		// its own, which may not have run yet: the connection may still be inside the
		// transaction, where the setting cannot change. It is dropped instead (a new one opens
		// with FULL), which also ends the transaction.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	default:
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), qSynchronousFull); rerr != nil {
			// A connection that cannot be set back must not serve writes that expect FULL.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			s.logger.Error("restore synchronous=FULL on the writer; connection dropped", "error", rerr)
		}
	}
	_ = conn.Close()
	if err != nil {
		return err
	}
	// Other connections see the transaction now; it is durable once the WAL is synced.
	hooks.RunVisible()
	if err := s.wal.sync(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	// In-memory state learns of the transaction once it is durable, as with a syncing commit.
	hooks.Run()
	return nil
}

// beginner is what *sql.DB and *sql.Conn have in common.
type beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// inTx runs fn in a transaction on db and commits it; the caller runs the returned commit hooks.
func (s *Store) inTx(ctx context.Context, db beginner, fn func(ctx context.Context, tx store.Executor) error) (*store.CommitHooks, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	hctx, hooks := store.BeginCommitHooks(ctx)
	if err := fn(hctx, executor{w: tx, r: tx, layout: s.layout}); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return hooks, nil
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// executor runs queries: writes on w, reads on r. Inside a transaction both are the transaction.
type executor struct {
	w querier
	r querier
	// layout says whether the per-DID index is read through did_operations_suffix (a database
	// indexed before migration 30) or through the positions of the DIDs' states; the store and
	// its transactions share it, and Relayout changes it while they run.
	layout *indexLayout
	// didOps is qDIDOperationList (a database read by suffix when it opened), didState
	// qDIDStateGet, didPositions qDIDPositions and didOpAt qDIDOperationAt, prepared on the
	// read pool; nil inside a transaction.
	didOps       *sql.Stmt
	didState     *sql.Stmt
	didPositions *sql.Stmt
	didOpAt      *sql.Stmt
}

// Now implements store.Executor. An embedded store has one process, so its clock is the
// database clock; it is read through SQLite all the same so both backends behave alike.
func (e executor) Now(ctx context.Context) (time.Time, error) {
	var ms int64
	if err := e.r.QueryRowContext(ctx, qNow).Scan(&ms); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return time.UnixMicro(ms).UTC(), nil
}
