package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/admintoken"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/deadletter"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/expiry"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/ipfs"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/relay"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/taskmgr"
	"github.com/anchord/anchord/internal/witnesslog"
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
	// claimOwner holds this instance's inbox and delivery claims (see claimOwner).
	claimOwner string

	profile sidetree.Profile
	limits  batchfile.Limits
	cas     *cas.Store
	// batches rebuilds index rows' requests from the batch files in cas (observer.Batches).
	batches *observer.Batches
	tasks   *taskmgr.Manager
	expiry  *expiry.Service
	// retry holds the dead-letter retry paths that components register, by kind.
	retry map[string]deadletter.KindRetryFunc

	checks map[string]httpapi.CheckFunc
	// routes are served on --host-url behind the API tokens; adminRoutes on --admin-addr
	// behind the admin token.
	routes      []func(mux httpapi.Router)
	adminRoutes []func(mux httpapi.Router)
	// obs is the observer once the write path is built; components that complete anchors wake
	// it.
	obs *observer.Observer
	// resolver is the write path's resolver (writePath), for the routes that resolve outside it.
	resolver *observer.Resolver
	// onIndexed are told of every anchor the observer indexes (after the commit). Set during
	// assembly, read only once the supervisor runs.
	onIndexed []func(observer.Result)
	// bodyLimits replace --http-max-body-bytes on the paths that take larger bodies.
	bodyLimits map[string]int64
	// apiLn and adminLn are bound before any shape is assembled (listen).
	apiLn, adminLn net.Listener
	// adminToken guards every route of the admin listener: --admin-token, or the one kept in
	// the data directory (listen).
	adminToken string
	// egress is the outbound guard towards other domains, built by outbound at its first use.
	egress *egress.Guard
	// witnessLog is the domain's witness log (--witness-log), nil when it keeps none: the
	// witness appends each credential it signs before it answers. Opened by the federation's
	// assembly, which advertises it.
	witnessLog *witnesslog.Log
	// federationView is what the explorer shows of the federation; the federation's assembly
	// sets it, at any point of the assembly. Nil: not federated.
	federationView httpapi.FederationSource
}

// log returns the logger of one component: the component attribute is set here, once.
func (c *core) log(component string) *slog.Logger { return c.logger.With("component", component) }

// newCore builds the parts every shape shares. instanceID names this process in task permits
// and op_queue rows.
func newCore(cfg config.Config, st store.Store, logger *slog.Logger, reg *prometheus.Registry, sup *supervisor, instanceID string) (*core, error) {
	c := &core{
		cfg: cfg, st: st, logger: logger, reg: reg, sup: sup, instanceID: instanceID,
		profile: cfg.SidetreeProfile(), limits: batchfile.DefaultLimits(),
		checks:     map[string]httpapi.CheckFunc{"database": st.Ping},
		retry:      map[string]deadletter.KindRetryFunc{},
		bodyLimits: map[string]int64{},
	}
	c.limits.CheckURIFunc = func(uri string) error { _, err := cas.ParseCID(uri); return err }
	if c.profile.OrbBatchFiles {
		// did:orb: a file is named by a hashlink whose link is this domain's /cas, which Orb's
		// URI length (500) leaves room for, and proofs are bare JWS strings, as Orb writes and
		// reads them.
		endpoint := cfg.ExternalEndpointURL()
		c.limits.ReferenceFunc = func(cid string, data []byte) string {
			return activity.NewHashlink(data, endpoint+"/cas/"+cid)
		}
		c.limits.CheckURIFunc = cas.CheckKey
		c.limits.OrbProofs = true
		c.limits.MaxCASURILength = max(c.limits.MaxCASURILength, relay.ForeignMaxCASURILength)
	}
	if err := c.buildCAS(); err != nil {
		return nil, err
	}
	batches, err := observer.NewBatches(observer.BatchesConfig{
		Profile: c.profile, Limits: c.limits, ForeignLimits: relay.ForeignLimits(c.limits), Logger: c.log("batches"), Registerer: reg,
	}, c.cas.FetchFunc)
	if err != nil {
		return nil, err
	}
	c.batches = batches
	c.tasks, err = taskmgr.New(taskmgr.Config{InstanceID: instanceID, CheckInterval: cfg.TaskManagerCheckInterval, Logger: c.log("taskmgr"), Registerer: reg}, st)
	if err != nil {
		return nil, err
	}
	exp, err := expiry.New(expiry.Config{Interval: cfg.DataExpiryCheckInterval, Logger: c.log("expiry"), Registerer: reg}, st, c.tasks.Fence)
	if err != nil {
		return nil, err
	}
	c.expiry = exp
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

// buildCAS builds the content store; with --cas-type ipfs it mirrors every file to the IPFS node
// through a pinner, which runs with the writers (the batch writer's last files are queued
// before it stops) and whose parked files an operator can retry.
func (c *core) buildCAS() error {
	var mirror cas.Mirror
	var node *ipfs.Client
	if c.cfg.CASType == "ipfs" {
		var err error
		if node, err = ipfs.New(ipfs.Config{URL: c.cfg.IPFSURL, RequestTimeout: c.cfg.IPFSTimeout, Logger: c.log("ipfs"), Registerer: c.reg}); err != nil {
			return fmt.Errorf("--ipfs-url: %w", err)
		}
		mirror = node
		c.sup.onStop(StageWriters, "ipfs-client", node.Close)
	}
	var err error
	c.cas, err = cas.NewStore(cas.StoreConfig{Version: cas.CIDVersion(c.cfg.CASCIDVersion), Mirror: mirror, Logger: c.log("cas"), Registerer: c.reg}, c.st)
	if err != nil || mirror == nil {
		return err
	}
	pinner, err := cas.NewPinner(cas.PinnerConfig{
		Owner: c.instanceID, Redelivery: c.cfg.Redelivery(), Logger: c.log("ipfs-pinner"), Registerer: c.reg,
	}, c.st, c.cas, mirror)
	if err != nil {
		return err
	}
	c.retry[cas.DeadLetterIPFSAdd] = pinner.RetryDeadLetter
	c.adminRoutes = append(c.adminRoutes, httpapi.CASRoutes(httpapi.CASAdminConfig{PinMissing: pinner.PinMissing, Logger: c.log("admin")}))
	c.sup.add(StageWriters, "ipfs-pinner", pinner.Run)
	return nil
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

// listen takes the ports Run bound (before anything joins a cluster: a port in use stops the
// process at once, before its task entry could make it look like a dead instance) and the
// admin token.
func (c *core) listen(lns listeners) error {
	c.apiLn, c.adminLn = lns.api, lns.admin
	c.claimOwner = claimOwner(c.instanceID, lns.api.Addr())
	c.sup.onStop(StageHTTP, "api-listener", func() { _ = c.apiLn.Close() })
	c.sup.onStop(StageHTTP, "admin-listener", func() { _ = c.adminLn.Close() })
	return c.loadAdminToken()
}

// claimOwner names the holder of this instance's claims on inbox rows and deliveries. An
// embedded instance has one id for life. A cluster instance's id is fresh per start (its task
// entry must not be inherited), so its claims are held under its host name and bound API
// address instead: the same instance started again on the same address takes back at once
// what its killed previous life held, and no live process can hold that name, since binding the
// address proves the previous holder gone. With an ephemeral port the name changes, and a dead
// life's claims expire with their TTL as before.
func claimOwner(instanceID string, api net.Addr) string {
	if instanceID == embeddedInstanceID {
		return instanceID
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return "listener:" + host + "/" + api.String()
}

// listeners are the API and admin ports, bound by listen before the start does anything else.
type listeners struct{ api, admin net.Listener }

// listen binds the API and admin ports.
func listen(cfg config.Config) (listeners, error) {
	api, err := net.Listen("tcp", cfg.HostURL)
	if err != nil {
		return listeners{}, fmt.Errorf("--host-url: %w", err)
	}
	admin, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		_ = api.Close()
		return listeners{}, fmt.Errorf("--admin-addr: %w", err)
	}
	return listeners{api: api, admin: admin}, nil
}

func (l listeners) close() {
	_ = l.api.Close()
	_ = l.admin.Close()
}

// loadAdminToken takes --admin-token, or else the token kept in the data directory, made at the
// first start: loopback is no credential, since anything on the host (another user, a process
// a peer's request tricked into calling it) reaches it. It runs once the ports are bound, so a
// start that fails on a busy port leaves no token behind. The token itself is never logged.
func (c *core) loadAdminToken() error {
	if c.cfg.AdminToken != "" {
		c.adminToken = c.cfg.AdminToken
		c.logger.Info("admin token", "source", "--admin-token")
		return nil
	}
	token, created, err := admintoken.LoadOrCreate(c.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("--admin-token is not set and the token kept in --data-dir is not usable "+
			"(set --admin-token or ANCHORD_ADMIN_TOKEN, or fix or delete the file): %w", err)
	}
	c.adminToken = token
	c.logger.Info("admin token", "source", "file", "file", admintoken.Path(c.cfg.DataDir), "created", created)
	return nil
}

// serve builds the HTTP servers over the routes the shape registered; both stop first, so no
// new operation is accepted during shutdown. It returns the API server.
func (c *core) serve() (*httpapi.Server, error) {
	auth, err := httpapi.ParseTokenAuth(c.cfg.AuthTokensDef, c.cfg.AuthTokens)
	if err != nil {
		return nil, fmt.Errorf("--auth-tokens-def: %w", err)
	}
	srv, err := httpapi.New(httpapi.Config{
		Listener: c.apiLn, ReadTimeout: c.cfg.HTTP.ReadTimeout, WriteTimeout: c.cfg.HTTP.WriteTimeout,
		IdleTimeout: c.cfg.HTTP.IdleTimeout, MaxBodyBytes: c.cfg.HTTP.MaxBodyBytes, PathBodyLimits: c.bodyLimits, AccessLog: c.cfg.HTTP.AccessLog,
		MaxConnections: c.cfg.HTTP.MaxConnections, RateLimit: c.cfg.HTTP.RateLimit, RateBurst: c.cfg.HTTP.RateBurst,
		ShutdownTimeout: c.cfg.ShutdownTimeout, HealthTimeout: c.cfg.HealthTimeout,
		Checks: c.checks, Gatherer: c.reg, Routes: mountAll(c.routes), Guard: auth.Wrap,
		Logger: c.log("http"), Registerer: c.reg,
	})
	if err != nil {
		return nil, err
	}
	c.sup.add(StageHTTP, "http", srv.Run)
	admin, err := httpapi.New(httpapi.Config{
		Listener: c.adminLn, ShutdownTimeout: c.cfg.ShutdownTimeout, HealthTimeout: c.cfg.HealthTimeout,
		Checks: c.checks, Routes: mountAll(append(c.adminRoutes, httpapi.DebugRoutes)),
		Guard:  func(h http.Handler) http.Handler { return httpapi.AdminAuth(c.adminToken, h) },
		Logger: c.log("admin-http"),
	})
	if err != nil {
		return nil, err
	}
	c.sup.add(StageHTTP, "admin-http", admin.Run)
	c.logger.Info("admin listener", "addr", c.adminLn.Addr().String())
	return srv, nil
}

func mountAll(routes []func(mux httpapi.Router)) func(mux httpapi.Router) {
	return func(mux httpapi.Router) {
		for _, r := range routes {
			r(mux)
		}
	}
}
