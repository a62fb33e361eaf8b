package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/deadletter"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/amqppubsub"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// Options are the inputs of Run that are not configuration.
type Options struct {
	Logger  *slog.Logger
	Version string
	// Ready, when set, is called once the HTTP server listens, with its address.
	Ready func(addr string)
}

// Run builds anchord from cfg and runs it until ctx is done, then shuts down in order. It
// returns nil after a clean shutdown.
func Run(ctx context.Context, cfg config.Config, opts Options) error {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger.Info("starting anchord", "version", opts.Version, "config", cfg)

	reg := prometheus.NewRegistry()
	if err := registerProcessMetrics(reg, opts.Version); err != nil {
		return err
	}

	st, err := openStore(ctx, cfg, logger, reg)
	if err != nil {
		return err
	}
	sup := &supervisor{logger: logger.With("component", "supervisor"), timeout: cfg.ShutdownTimeout}
	sup.onStop(StageDatabase, "store", st.Close)
	w := &wiring{cfg: cfg, st: st, logger: logger, reg: reg, sup: sup, checks: map[string]httpapi.CheckFunc{"database": st.Ping}}

	if cfg.MQURL != "" {
		ps, err := openBroker(ctx, cfg, st, logger, reg)
		if err != nil {
			st.Close()
			return err
		}
		w.ps = ps
		w.checks["broker"] = ps.Check
		// The broker's router (redelivery tiers, parking) runs until every publisher and consumer
		// above it has stopped; then the connection closes.
		sup.add(StageBroker, "broker", ps.Run)
		sup.onStop(StageBroker, "broker-connection", func() { _ = ps.Close() })
	}

	routes, err := buildPipeline(ctx, w)
	if err != nil {
		if w.ps != nil {
			_ = w.ps.Close()
		}
		st.Close()
		return err
	}

	srv, err := httpapi.New(httpapi.Config{
		Addr:            cfg.HostURL,
		ReadTimeout:     cfg.HTTP.ReadTimeout,
		WriteTimeout:    cfg.HTTP.WriteTimeout,
		IdleTimeout:     cfg.HTTP.IdleTimeout,
		MaxBodyBytes:    cfg.HTTP.MaxBodyBytes,
		ShutdownTimeout: cfg.ShutdownTimeout,
		HealthTimeout:   cfg.HealthTimeout,
		Checks:          w.checks,
		Gatherer:        reg,
		Routes:          routes,
		Logger:          logger.With("component", "http"),
		Registerer:      reg,
	})
	if err != nil {
		if w.ps != nil {
			_ = w.ps.Close()
		}
		st.Close()
		return fmt.Errorf("--host-url: %w", err)
	}
	sup.add(StageHTTP, "http", srv.Run)
	if cfg.DebugAddr != "" {
		run, err := debugServer(cfg.DebugAddr)
		if err != nil {
			st.Close()
			return err
		}
		sup.add(StageHTTP, "debug", run)
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

// openStore opens the configured store. PostgreSQL may not be up yet when a cluster starts, so
// it is retried with backoff (and a log line per attempt) until it answers or ctx is done.
func openStore(ctx context.Context, cfg config.Config, logger *slog.Logger, reg prometheus.Registerer) (store.Store, error) {
	log := logger.With("component", "store")
	if cfg.DatabaseURL == "" {
		s, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: cfg.DataDir, Synchronous: cfg.SQLiteSynchronous, Logger: log, Registerer: reg})
		if err != nil {
			return nil, fmt.Errorf("--data-dir %s: %w", cfg.DataDir, err)
		}
		return s, nil
	}
	for attempt := 1; ; attempt++ {
		s, err := pgstore.Open(ctx, pgstore.Config{URL: cfg.DatabaseURL, MaxConns: cfg.DatabaseMaxConns, Logger: log, Registerer: reg})
		if err == nil {
			return s, nil
		}
		wait := loop.Backoff(attempt, 500*time.Millisecond, 1.5, 10*time.Second)
		log.Warn("waiting for the database", "attempt", attempt, "retry_in", wait, "error", err)
		if !loop.Sleep(ctx, wait) {
			return nil, fmt.Errorf("--database-url: database not reachable: %w", err)
		}
	}
}

// openBroker connects to RabbitMQ, waiting for it with backoff (and a log line per attempt) until
// ctx is done. Parked messages are recorded as dead letters.
func openBroker(ctx context.Context, cfg config.Config, st store.Store, logger *slog.Logger, reg prometheus.Registerer) (*amqppubsub.PubSub, error) {
	ps, err := amqppubsub.New(ctx, amqppubsub.Config{
		URL: cfg.MQURL, Prefix: cfg.MQPrefix, QueueType: amqppubsub.QueueType(cfg.MQQueueType),
		Redelivery: pubsub.RedeliveryConfig{
			MaxAttempts: cfg.RedeliveryMaxAttempts, InitialInterval: cfg.RedeliveryInitialInterval,
			Multiplier: cfg.RedeliveryMultiplier, MaxInterval: cfg.RedeliveryMaxInterval,
		},
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

func registerProcessMetrics(reg prometheus.Registerer, version string) error {
	revision := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "anchord_build_info",
		Help:        "Build information; the value is always 1.",
		ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": runtime.Version()},
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
