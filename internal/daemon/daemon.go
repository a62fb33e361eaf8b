package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/anchord/anchord/internal/buildinfo"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/deadletter"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub/amqppubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/trust"
)

// Options are the inputs of Run that are not configuration.
type Options struct {
	Logger *slog.Logger
	// Build says which anchord this is (GET /version, anchord_build_info); zero means unknown.
	Build buildinfo.Info
	// Ready, when set, is called once the HTTP server listens, with its address.
	Ready func(addr string)
}

// Run builds anchord from cfg and runs it until ctx is done, then shuts down in order. It
// returns nil after a clean shutdown. It sets the process's umask to 077: it is the process.
func Run(ctx context.Context, cfg config.Config, opts Options) error {
	// Whatever anchord creates is its own: the data directory, the database, the admin token,
	// and the witness log, whose files tessera creates 0644 (and directories 0755) as it goes,
	// where a chmod after each would leave a window and need to know every file. Files are
	// created with explicit modes where anchord makes them; this covers the libraries' too.
	syscall.Umask(0o077)
	logger := cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	if opts.Build == (buildinfo.Info{}) {
		opts.Build = buildinfo.Read("", "")
	}
	logger.Info("starting anchord", "version", opts.Build.Version, "revision", opts.Build.Revision)
	logConfig(logger, cfg)
	reg := prometheus.NewRegistry()
	if err := registerProcessMetrics(reg, opts.Build); err != nil {
		return err
	}
	// What a parameter can get wrong is checked before anything is created, and a start that
	// fails anyway removes the data directory it created: a failed first start leaves no trace
	// (no directory, no recorded DID method) that the corrected command would trip over.
	if err := precheck(cfg); err != nil {
		return err
	}
	// The ports are bound before anything is created or waited for: a busy port fails the
	// start at once and leaves no data directory behind, and while the start waits, the ports
	// answer 503 with what it waits for instead of holding connections that hang.
	lns, err := listen(cfg)
	if err != nil {
		return err
	}
	gate := newStartGate(logger.With("component", "start"), lns.api, lns.admin)
	ownDataDir, err := createDataDir(cfg)
	if err != nil {
		_ = gate.handOver(time.Second)
		lns.close()
		return err
	}
	handedOver := false
	defer func() {
		if !handedOver {
			_ = gate.handOver(time.Second)
			lns.close()
			if ownDataDir {
				// Everything in it is this failed start's; the store is closed by now.
				if err := os.RemoveAll(cfg.DataDir); err != nil {
					logger.Warn("remove the data directory of a failed start", "dir", cfg.DataDir, "error", err)
				}
			}
		}
	}()
	st, err := openStore(ctx, cfg, logger, reg, gate)
	if err != nil {
		return err
	}
	sup := &supervisor{logger: logger.With("component", "supervisor"), timeout: cfg.ShutdownTimeout}
	// The database closes last, since every stage above writes to it.
	sup.onStop(StageDatabase, "store", st.Close)
	if s, ok := st.(*sqlitestore.Store); ok && s.Checkpointer() != nil {
		// It runs until the database closes: every stage above commits to the WAL it copies.
		sup.add(StageDatabase, "sqlite-checkpointer", s.Checkpointer().Run)
	}
	if s, ok := st.(*pgstore.Store); ok && s.Maintainer() != nil {
		sup.add(StageDatabase, "postgres-maintainer", s.Maintainer().Run)
	}
	srv, err := assemble(ctx, cfg, st, logger, reg, sup, opts.Build, lns, gate)
	if err != nil {
		sup.abort()
		return err
	}
	handedOver = true
	if err := gate.handOver(cfg.ShutdownTimeout); err != nil {
		sup.abort()
		return err
	}
	if opts.Ready != nil {
		opts.Ready(srv.Addr())
	}
	logger.Info("anchord started", "addr", srv.Addr(), "store", st.Backend())
	if err := sup.run(ctx); err != nil {
		return err
	}
	logger.Info("anchord stopped")
	return nil
}

// createDataDir creates an embedded instance's data directory when there is none, and reports
// whether this process made it: only then may a failed start remove it, since nothing else can
// be in it (an embedded instance's directory is its own; a cluster instance's holds the admin
// token that instances sharing it agree on, which a failed start must not take from the others,
// so a cluster instance never removes it).
func createDataDir(cfg config.Config) (bool, error) {
	if cfg.DatabaseURL != "" || cfg.DataDir == "" {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(cfg.DataDir)), 0o700); err != nil {
		return false, fmt.Errorf("--data-dir %s: %w", cfg.DataDir, err)
	}
	err := os.Mkdir(cfg.DataDir, 0o700)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrExist):
		return false, nil
	default:
		return false, fmt.Errorf("--data-dir %s: %w", cfg.DataDir, err)
	}
}

// precheck validates the parameters that only the daemon parses, so that a wrong value fails
// the start before it creates or records anything.
func precheck(cfg config.Config) error {
	if _, err := httpapi.ParseTokenAuth(cfg.AuthTokensDef, cfg.AuthTokens); err != nil {
		return fmt.Errorf("--auth-tokens-def: %w", err)
	}
	if _, err := trust.ClientConfig(cfg.TLSCAFile); err != nil {
		return fmt.Errorf("--tls-ca-file: %w", err)
	}
	return nil
}

// shape assembles one deployment on the core: its components, their supervisor stages and routes.
type shape func(ctx context.Context, c *core) error

// assemble picks the deployment shape, builds it on the core and returns the HTTP server.
func assemble(ctx context.Context, cfg config.Config, st store.Store, logger *slog.Logger, reg *prometheus.Registry, sup *supervisor, bi buildinfo.Info, lns listeners, gate *startGate) (*httpapi.Server, error) {
	// A fresh identity per process start for an instance among others: a restarted instance
	// never inherits the task entry (and fence) of its previous life, and a submitter process
	// never shares the API instance's identity in the task permits.
	name, build, instanceID := "embedded", shape(embedded), embeddedInstanceID
	switch {
	case cfg.Roles == "submitter":
		name, build, instanceID = "submitter", submitterOnly, uuid.NewString()
	case cfg.MQURL != "":
		name, build, instanceID = "cluster", cluster, uuid.NewString()
	}
	c, err := newCore(cfg, st, logger, reg, sup, instanceID)
	if err != nil {
		return nil, err
	}
	if err := c.listen(lns); err != nil {
		return nil, err
	}
	logger.Info("instance", "instance_id", instanceID, "claim_owner", c.claimOwner, "shape", name)
	c.routes = append(c.routes, httpapi.VersionRoutes(c.versionInfo(bi)), httpapi.OpenAPIRoutes())
	c.witnessPolicy()
	if cfg.MQURL != "" {
		gate.wait("RabbitMQ")
		ps, err := openBroker(ctx, cfg, st, logger, reg)
		if err != nil {
			return nil, err
		}
		c.useBroker(ps, ps.Run, ps.Close)
	}
	gate.wait("its components to start")
	if err := build(ctx, c); err != nil {
		return nil, err
	}
	return c.serve()
}

// openStore opens the configured store. PostgreSQL may not be up yet when a cluster starts, so
// it is retried with backoff (and a log line per attempt) until it answers or ctx is done;
// what retrying cannot fix (no such database, credentials refused) stops the process at once.
func openStore(ctx context.Context, cfg config.Config, logger *slog.Logger, reg prometheus.Registerer, gate *startGate) (store.Store, error) {
	log := logger.With("component", "store")
	if cfg.DatabaseURL == "" {
		s, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: cfg.DataDir, Synchronous: cfg.SQLiteSynchronous, MmapSize: mmapSize(cfg.SQLiteMmapSize),
			ReaderCacheSize: cfg.SQLiteCacheSize, CheckpointInterval: sqlitestore.CheckpointIntervalDefault, Logger: log, Registerer: reg})
		if err != nil {
			return nil, fmt.Errorf("--data-dir %s: %w", cfg.DataDir, err)
		}
		return s, nil
	}
	gate.wait("PostgreSQL")
	for attempt := 1; ; attempt++ {
		s, err := pgstore.Open(ctx, pgstore.Config{
			URL: cfg.DatabaseURL, MaxConns: cfg.DatabaseMaxConns, MaintainInterval: pgstore.MaintainIntervalDefault, Logger: log, Registerer: reg,
		})
		if err == nil {
			return s, nil
		}
		if errors.Is(err, pgstore.ErrPermanent) {
			return nil, fmt.Errorf("--database-url: %w", err)
		}
		wait := loop.Backoff(attempt, 500*time.Millisecond, 1.5, 10*time.Second)
		log.Warn("waiting for the database", "attempt", attempt, "retry_in", wait, "error", err)
		if !loop.Sleep(ctx, wait) {
			return nil, fmt.Errorf("--database-url: stopped while waiting for PostgreSQL: %w", err)
		}
	}
}

// openBroker connects to RabbitMQ, waiting for it with backoff (and a log line per attempt) until
// ctx is done. Parked messages are recorded as dead letters.
func openBroker(ctx context.Context, cfg config.Config, st store.Store, logger *slog.Logger, reg prometheus.Registerer) (*amqppubsub.PubSub, error) {
	tlsConfig, err := trust.ClientConfig(cfg.TLSCAFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-ca-file: %w", err)
	}
	ps, err := amqppubsub.New(ctx, amqppubsub.Config{
		URL: cfg.MQURL, Prefix: cfg.MQPrefix, QueueType: amqppubsub.QueueType(cfg.MQQueueType), TLS: tlsConfig,
		Redelivery:               cfg.Redelivery(),
		ParkFunc:                 deadletter.ParkFunc(st),
		PublisherChannelPoolSize: cfg.MQPublisherChannelPoolSize,
		MaxConnectionChannels:    cfg.MQMaxConnectionChannels,
		Logger:                   logger.With("component", "pubsub"),
		Registerer:               reg,
	})
	if err != nil {
		return nil, fmt.Errorf("--mq-url: %w", err)
	}
	return ps, nil
}

func registerProcessMetrics(reg prometheus.Registerer, build buildinfo.Info) error {
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "anchord_build_info",
		Help:        "Build information; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": build.Version, "revision": build.Revision, "goversion": build.GoVersion},
	})
	info.Set(1)
	for _, c := range []prometheus.Collector{
		info,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register process metrics: %w", err)
		}
	}
	return nil
}

// logConfig logs the effective configuration, one line per family of parameters, so that each
// line stays readable in text mode and a JSON parser sees one small object per line.
func logConfig(logger *slog.Logger, cfg config.Config) {
	for _, g := range cfg.LogGroups() {
		logger.LogAttrs(context.Background(), slog.LevelInfo, "configuration", g...)
	}
}

// mmapSize maps the parameter (0: no map) onto the store's setting (0: its default, negative: none).
func mmapSize(param int64) int64 {
	if param == 0 {
		return -1
	}
	return param
}
