package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/expiry"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/taskmgr"
)

// core is what every deployment shape is built on: the store, the CAS, the task manager with the
// data-expiry task, and the HTTP server's routes and health checks. A shape (embedded, cluster,
// submitter) adds its own components to it and registers their supervisor stages.
type core struct {
	cfg        config.Config
	st         store.Store
	ps         pubsub.PubSub // nil unless the shape runs on a broker
	logger     *slog.Logger
	reg        *prometheus.Registry
	sup        *supervisor
	instanceID string

	profile sidetree.Profile
	limits  batchfile.Limits
	cas     *cas.Store
	tasks   *taskmgr.Manager

	checks map[string]httpapi.CheckFunc
	routes []func(mux httpapi.Router)
}

// log returns the logger of one component: the component attribute is set here, once.
func (c *core) log(component string) *slog.Logger { return c.logger.With("component", component) }

// newCore builds the parts every shape shares. instanceID names this process in task permits
// and op_queue rows.
func newCore(cfg config.Config, st store.Store, logger *slog.Logger, reg *prometheus.Registry, sup *supervisor, instanceID string) (*core, error) {
	c := &core{
		cfg: cfg, st: st, logger: logger, reg: reg, sup: sup, instanceID: instanceID,
		profile: cfg.SidetreeProfile(), limits: batchfile.DefaultLimits(),
		checks: map[string]httpapi.CheckFunc{"database": st.Ping},
	}
	c.limits.CheckURIFunc = func(uri string) error { _, err := cas.ParseCID(uri); return err }
	var err error
	c.cas, err = cas.NewStore(cas.StoreConfig{Version: cas.CIDVersion(cfg.CASCIDVersion), Logger: c.log("cas"), Registerer: reg}, st)
	if err != nil {
		return nil, err
	}
	c.tasks, err = taskmgr.New(taskmgr.Config{InstanceID: instanceID, CheckInterval: cfg.TaskManagerCheckInterval, Logger: c.log("taskmgr"), Registerer: reg}, st)
	if err != nil {
		return nil, err
	}
	exp, err := expiry.New(expiry.Config{Interval: cfg.DataExpiryCheckInterval, Logger: c.log("expiry"), Registerer: reg}, st, c.tasks.Fence)
	if err != nil {
		return nil, err
	}
	if err := exp.Register(expiry.Disposable("anchored_ops", "expires_at")); err != nil {
		return nil, err
	}
	if err := c.tasks.Register(taskmgr.Task{ID: expiry.TaskID, Interval: exp.Interval(), Run: exp.Expire}); err != nil {
		return nil, err
	}
	// The task manager stops early, releasing its permits, while the writers still run.
	sup.add(StageConsumers, "taskmgr", c.tasks.Run)
	return c, nil
}

// useBroker makes ps the shape's pub/sub: /healthcheck reports it, and its router (redelivery
// tiers, parking) runs until every publisher and consumer above it has stopped; then the
// connection closes.
func (c *core) useBroker(ps pubsub.PubSub, run func(ctx context.Context) error, closeFn func() error) {
	c.ps = ps
	c.checks["broker"] = ps.Check
	c.sup.add(StageBroker, "broker", run)
	c.sup.onStop(StageBroker, "broker-connection", func() { _ = closeFn() })
}

// serve builds the HTTP server over the routes the shape registered. It stops first: no new
// operation is accepted during shutdown.
func (c *core) serve() (*httpapi.Server, error) {
	srv, err := httpapi.New(httpapi.Config{
		Addr: c.cfg.HostURL, ReadTimeout: c.cfg.HTTP.ReadTimeout, WriteTimeout: c.cfg.HTTP.WriteTimeout,
		IdleTimeout: c.cfg.HTTP.IdleTimeout, MaxBodyBytes: c.cfg.HTTP.MaxBodyBytes, AccessLog: c.cfg.HTTP.AccessLog,
		ShutdownTimeout: c.cfg.ShutdownTimeout, HealthTimeout: c.cfg.HealthTimeout,
		Checks: c.checks, Gatherer: c.reg, Routes: c.mount,
		Logger: c.log("http"), Registerer: c.reg,
	})
	if err != nil {
		return nil, fmt.Errorf("--host-url: %w", err)
	}
	c.sup.add(StageHTTP, "http", srv.Run)
	return srv, nil
}

func (c *core) mount(mux httpapi.Router) {
	for _, r := range c.routes {
		r(mux)
	}
}
