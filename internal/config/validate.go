package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anchord/anchord/internal/admintoken"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/secret"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
)

// Validate checks every parameter and returns the first problem as a *ParamError.
func (c *Config) Validate() error {
	if err := validateHostPort(c.HostURL); err != nil {
		return &ParamError{Param: "host-url", Value: c.HostURL, Err: err}
	}
	if err := validateHostPort(c.AdminAddr); err != nil {
		return &ParamError{Param: "admin-addr", Value: c.AdminAddr, Err: err}
	}
	if !isLoopback(c.AdminAddr) && c.AdminToken == "" {
		return &ParamError{Param: "admin-addr", Value: c.AdminAddr, Err: fmt.Errorf("the admin API on a non-loopback address needs --admin-token")}
	}
	if c.AdminToken != "" {
		if err := admintoken.Check(c.AdminToken); err != nil {
			return &ParamError{Param: "admin-token", Value: secret.Redacted, Err: err}
		}
	}
	if _, err := httpapi.ParseTokenAuth(c.AuthTokensDef, c.AuthTokens); err != nil {
		return &ParamError{Param: "auth-tokens-def", Value: c.AuthTokensDef, Err: err}
	}
	if c.DatabaseURL == "" && strings.TrimSpace(c.DataDir) == "" {
		return &ParamError{Param: "data-dir", Value: c.DataDir, Err: fmt.Errorf("must not be empty when --database-url is not set")}
	}
	if c.DatabaseURL != "" {
		if err := validateURL(c.DatabaseURL, "postgres", "postgresql"); err != nil {
			return &ParamError{Param: "database-url", Value: secret.RedactURL(c.DatabaseURL), Err: err}
		}
	}
	if c.MQURL != "" {
		if err := validateURL(c.MQURL, "amqp", "amqps"); err != nil {
			return &ParamError{Param: "mq-url", Value: secret.RedactURL(c.MQURL), Err: err}
		}
		if c.DatabaseURL == "" {
			return &ParamError{Param: "mq-url", Value: secret.RedactURL(c.MQURL), Err: fmt.Errorf("cluster mode needs --database-url too: instances share PostgreSQL")}
		}
	}
	if c.MQQueueType != "classic" && c.MQQueueType != "quorum" {
		return &ParamError{Param: "mq-queue-type", Value: c.MQQueueType, Err: fmt.Errorf("must be classic or quorum")}
	}
	if c.MQPrefix == "" {
		return &ParamError{Param: "mq-prefix", Value: c.MQPrefix, Err: fmt.Errorf("must not be empty")}
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		return &ParamError{Param: "log-level", Value: c.LogLevel, Err: fmt.Errorf("must be one of debug, info, warn, error")}
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return &ParamError{Param: "log-format", Value: c.LogFormat, Err: fmt.Errorf("must be text or json")}
	}
	if c.DatabaseMaxConns < 1 {
		return &ParamError{Param: "database-max-conns", Value: fmt.Sprint(c.DatabaseMaxConns), Err: fmt.Errorf("must be at least 1")}
	}
	if c.HTTP.MaxBodyBytes < 1024 {
		return &ParamError{Param: "http-max-body-bytes", Value: fmt.Sprint(c.HTTP.MaxBodyBytes), Err: fmt.Errorf("must be at least 1024")}
	}
	if c.HTTP.RateLimit < 0 || math.IsNaN(c.HTTP.RateLimit) || math.IsInf(c.HTTP.RateLimit, 0) {
		return &ParamError{Param: "http-rate-limit", Value: fmt.Sprint(c.HTTP.RateLimit), Err: fmt.Errorf("must be a finite number, 0 (off) or more")}
	}
	if c.HTTP.RateBurst < 0 {
		return &ParamError{Param: "http-rate-burst", Value: fmt.Sprint(c.HTTP.RateBurst), Err: fmt.Errorf("must be 0 (one second's worth) or more")}
	}
	if err := c.SidetreeProfile().Validate(); err != nil {
		// Name the parameter at fault, with the value as typed: the method alone, with the
		// default algorithms, tells which.
		alone := Default()
		alone.DIDMethod = c.DIDMethod
		if alone.SidetreeProfile().Validate() != nil {
			return &ParamError{Param: "did-method", Value: c.DIDMethod, Err: err}
		}
		return &ParamError{Param: "signature-algorithms", Value: c.SignatureAlgorithms, Err: err}
	}
	for _, n := range []struct {
		name string
		v    int
		min  int
	}{
		{"max-operation-count", c.MaxOperationCount, 1},
		{"http-max-connections", c.HTTP.MaxConnections, 1},
		{"max-operations-per-did", c.MaxOperationsPerDID, 1},
		{"state-cache-size", c.StateCacheSize, 1},
		{"max-document-bytes", c.MaxDocumentBytes, 1024},
		{"op-queue-max-backlog", c.OpQueueMaxBacklog, 1},
		{"mq-redelivery-max-attempts", c.RedeliveryMaxAttempts, 1},
		{"mq-publisher-channel-pool-size", c.MQPublisherChannelPoolSize, 1},
		{"mq-max-connection-channels", c.MQMaxConnectionChannels, 1},
		{"mq-op-queue-pool", c.MQOpQueuePool, 1},
		{"mq-observer-pool", c.MQObserverPool, 1},
		{"op-queue-max-ops-to-repost", c.OpQueueMaxOpsToRepost, 1},
		{"submitter-claim-limit", c.SubmitterClaimLimit, 1},
		{"submitter-concurrency", c.SubmitterConcurrency, 1},
		{"submitter-max-attempts", c.SubmitterMaxAttempts, 1},
		{"ledger-status-page-size", c.LedgerStatusPageSize, 1},
	} {
		if n.v < n.min {
			return &ParamError{Param: n.name, Value: fmt.Sprint(n.v), Err: fmt.Errorf("must be at least %d", n.min)}
		}
	}
	if c.MaxOperationCount > batchfile.MaxOperationsDefault {
		return &ParamError{Param: "max-operation-count", Value: fmt.Sprint(c.MaxOperationCount), Err: fmt.Errorf("the protocol allows at most %d", batchfile.MaxOperationsDefault)}
	}
	if c.SubmitterBackoffMultiplier < 1 {
		return &ParamError{Param: "submitter-backoff-multiplier", Value: fmt.Sprint(c.SubmitterBackoffMultiplier), Err: fmt.Errorf("must be at least 1")}
	}
	if c.RedeliveryMultiplier < 1 {
		return &ParamError{Param: "mq-redelivery-multiplier", Value: fmt.Sprint(c.RedeliveryMultiplier), Err: fmt.Errorf("must be at least 1")}
	}
	switch c.AnchorBackend {
	case "local", "witness":
	case "ledger":
		if err := validateURL(c.LedgerURL, "http", "https"); err != nil {
			return &ParamError{Param: "ledger-url", Value: secret.RedactURL(c.LedgerURL), Err: fmt.Errorf("the ledger backend needs the ledger's REST API: %w", err)}
		}
		switch c.LedgerAPI {
		case "sawtooth":
		case "splinter":
			if !strings.Contains(c.LedgerServiceID, "::") {
				return &ParamError{Param: "ledger-service-id", Value: c.LedgerServiceID, Err: fmt.Errorf("splinter needs circuit::service")}
			}
		default:
			return &ParamError{Param: "ledger-api", Value: c.LedgerAPI, Err: fmt.Errorf("must be sawtooth or splinter")}
		}
		if c.LedgerRequestTimeout*2 > c.SubmitterClaimTTL {
			return &ParamError{Param: "ledger-request-timeout", Value: c.LedgerRequestTimeout.String(),
				Err: fmt.Errorf("must be at most half of --submitter-claim-ttl (%s)", c.SubmitterClaimTTL)}
		}
	default:
		return &ParamError{Param: "anchor-backend", Value: c.AnchorBackend, Err: fmt.Errorf("must be local, ledger or witness")}
	}
	for name, d := range map[string]time.Duration{"max-witness-delay": c.Witness.MaxWitnessDelay,
		"anchor-status-in-process-grace-period": c.Witness.GracePeriod, "anchor-status-monitoring-interval": c.Witness.MonitorInterval,
		"vct-monitoring-interval": c.Witness.ProofMonitorInterval} {
		if d <= 0 {
			return &ParamError{Param: name, Value: d.String(), Err: fmt.Errorf("must be positive")}
		}
	}
	if c.Witness.MaxRecords < 1 {
		return &ParamError{Param: "anchor-status-max-records", Value: fmt.Sprint(c.Witness.MaxRecords), Err: fmt.Errorf("must be at least 1")}
	}
	switch c.Roles {
	case "all":
	case "submitter":
		if c.AnchorBackend != "ledger" {
			return &ParamError{Param: "roles", Value: c.Roles, Err: fmt.Errorf("a submitter needs --anchor-backend ledger")}
		}
		if c.DatabaseURL == "" {
			return &ParamError{Param: "roles", Value: c.Roles, Err: fmt.Errorf("a separate submitter shares the database: set --database-url")}
		}
	default:
		return &ParamError{Param: "roles", Value: c.Roles, Err: fmt.Errorf("must be all or submitter")}
	}
	if err := c.validateFederation(); err != nil {
		return err
	}
	if n := c.Cosigner.Name; n != "" && (strings.ContainsAny(n, "+ \t\n") || !utf8.ValidString(n)) {
		return &ParamError{Param: "tlog-witness-name", Value: n, Err: fmt.Errorf("a key name has no space and no '+'")}
	}
	if err := c.validateWitnessLog(); err != nil {
		return err
	}
	if c.OpQueueTaskExpiration <= c.OpQueueTaskMonitorInterval {
		return &ParamError{Param: "op-queue-task-expiration", Value: c.OpQueueTaskExpiration.String(),
			Err: fmt.Errorf("must exceed --op-queue-task-monitor-interval (%s), or live instances are taken over", c.OpQueueTaskMonitorInterval)}
	}
	if c.SQLiteMmapSize < 0 {
		return &ParamError{Param: "sqlite-mmap-size", Value: fmt.Sprint(c.SQLiteMmapSize), Err: fmt.Errorf("must not be negative")}
	}
	if c.SQLiteCacheSize < 64<<10 {
		return &ParamError{Param: "sqlite-cache-size", Value: fmt.Sprint(c.SQLiteCacheSize), Err: fmt.Errorf("must be at least 65536")}
	}
	if c.SQLiteSynchronous != "full" && c.SQLiteSynchronous != "normal" {
		return &ParamError{Param: "sqlite-synchronous", Value: c.SQLiteSynchronous, Err: fmt.Errorf("must be full or normal")}
	}
	if c.IPFSTimeout <= 0 {
		return &ParamError{Param: "ipfs-timeout", Value: c.IPFSTimeout.String(), Err: fmt.Errorf("must be positive")}
	}
	switch c.CASType {
	case "local":
	case "ipfs":
		if err := validateURL(c.IPFSURL, "http", "https"); err != nil {
			return &ParamError{Param: "ipfs-url", Value: secret.RedactURL(c.IPFSURL), Err: fmt.Errorf("--cas-type ipfs needs the node's RPC API (e.g. http://127.0.0.1:5001): %w", err)}
		}
	default:
		return &ParamError{Param: "cas-type", Value: c.CASType, Err: fmt.Errorf("must be local or ipfs")}
	}
	for _, o := range c.AllowedOriginList() {
		if len(o) > sidetree.MaxAnchorOriginLength {
			return &ParamError{Param: "allowed-origins", Value: c.AllowedOrigins, Err: fmt.Errorf("an origin is at most %d bytes", sidetree.MaxAnchorOriginLength)}
		}
	}
	if c.CASCIDVersion != 0 && c.CASCIDVersion != 1 {
		return &ParamError{Param: "cas-cid-version", Value: fmt.Sprint(c.CASCIDVersion), Err: fmt.Errorf("must be 0 or 1")}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"batch-writer-timeout", c.BatchWriterTimeout},
		{"op-queue-operation-lifespan", c.OpQueueOperationLifespan},
		{"mq-redelivery-initial-interval", c.RedeliveryInitialInterval},
		{"mq-redelivery-max-interval", c.RedeliveryMaxInterval},
		{"op-queue-task-monitor-interval", c.OpQueueTaskMonitorInterval},
		{"op-queue-task-expiration", c.OpQueueTaskExpiration},
		{"task-manager-check-interval", c.TaskManagerCheckInterval},
		{"data-expiry-check-interval", c.DataExpiryCheckInterval},
		{"ledger-request-timeout", c.LedgerRequestTimeout},
		{"submitter-interval", c.SubmitterInterval},
		{"submitter-claim-ttl", c.SubmitterClaimTTL},
		{"submitter-backoff-initial", c.SubmitterBackoffInitial},
		{"submitter-backoff-max", c.SubmitterBackoffMax},
		{"ledger-status-poll-interval", c.LedgerStatusPollInterval},
		{"ledger-unknown-grace", c.LedgerUnknownGrace},
		{"http-read-timeout", c.HTTP.ReadTimeout},
		{"http-write-timeout", c.HTTP.WriteTimeout},
		{"http-idle-timeout", c.HTTP.IdleTimeout},
		{"shutdown-timeout", c.ShutdownTimeout},
		{"health-timeout", c.HealthTimeout},
	} {
		if d.v <= 0 {
			return &ParamError{Param: d.name, Value: d.v.String(), Err: fmt.Errorf("must be positive")}
		}
	}
	return nil
}

func (c *Config) validateFederation() error {
	f := c.Federation
	if f.ExternalEndpoint != "" {
		u, err := url.Parse(f.ExternalEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return &ParamError{Param: "external-endpoint", Value: f.ExternalEndpoint, Err: fmt.Errorf("must be an http(s) base URL without query, fragment or user")}
		}
	}
	for _, p := range []struct{ name, v string }{{"follow-auth-policy", f.FollowAuthPolicy}, {"invite-witness-auth-policy", f.InviteWitnessAuthPolicy}} {
		if p.v != federation.PolicyAcceptAll && p.v != federation.PolicyAcceptList {
			return &ParamError{Param: p.name, Value: p.v, Err: fmt.Errorf("must be %s or %s", federation.PolicyAcceptAll, federation.PolicyAcceptList)}
		}
	}
	if f.InboxMaxActivityBytes < 1024 || f.InboxMaxAnchorActivityBytes < f.InboxMaxActivityBytes {
		return &ParamError{Param: "inbox-max-activity-bytes", Value: fmt.Sprint(f.InboxMaxActivityBytes),
			Err: fmt.Errorf("must be at least 1024 and at most --inbox-max-anchor-activity-bytes (%d)", f.InboxMaxAnchorActivityBytes)}
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"inbox-actor-rate-limit", f.InboxActorRateLimit}, {"inbox-domain-rate-limit", f.InboxDomainRateLimit}} {
		if r.v <= 0 || math.IsNaN(r.v) || math.IsInf(r.v, 0) {
			return &ParamError{Param: r.name, Value: fmt.Sprint(r.v), Err: fmt.Errorf("must be a positive number")}
		}
	}
	if _, err := egress.ParseAllowed(f.PeerAllowedAddresses); err != nil {
		return &ParamError{Param: "peer-allowed-addresses", Value: f.PeerAllowedAddresses, Err: err}
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"activitypub-page-size", f.PageSize}, {"sync-max-activities", f.SyncMaxActivities},
		{"inbox-actor-rate-burst", f.InboxActorRateBurst}, {"inbox-domain-rate-burst", f.InboxDomainRateBurst},
		{"peer-max-requests", f.PeerMaxRequests}, {"peer-max-requests-per-host", f.PeerMaxRequestsPerHost}} {
		if n.v < 1 {
			return &ParamError{Param: n.name, Value: fmt.Sprint(n.v), Err: fmt.Errorf("must be at least 1")}
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"max-clock-skew", f.MaxClockSkew}, {"sync-interval", f.SyncInterval}, {"sync-accelerated-interval", f.SyncAcceleratedInterval},
		{"sync-min-activity-age", f.SyncMinActivityAge}, {"peer-request-timeout", f.RequestTimeout}, {"inbox-expiry-period", f.InboxExpiryPeriod}} {
		if d.v <= 0 {
			return &ParamError{Param: d.name, Value: d.v.String(), Err: fmt.Errorf("must be positive")}
		}
	}
	return nil
}

func (c *Config) validateWitnessLog() error {
	w := c.WitnessLog
	if w.MariaDBURL != "" {
		if !w.Enabled {
			return &ParamError{Param: "witness-log-mariadb-url", Value: secret.RedactURL(w.MariaDBURL), Err: fmt.Errorf("has no use without --witness-log")}
		}
		if err := validateURL(w.MariaDBURL, "mysql", "mariadb"); err != nil {
			return &ParamError{Param: "witness-log-mariadb-url", Value: secret.RedactURL(w.MariaDBURL), Err: err}
		}
		u, _ := url.Parse(w.MariaDBURL) // validateURL parsed it
		if db := strings.Trim(u.Path, "/"); db == "" || strings.Contains(db, "/") {
			return &ParamError{Param: "witness-log-mariadb-url", Value: secret.RedactURL(w.MariaDBURL), Err: fmt.Errorf("the path must name the log's own database")}
		}
	}
	// Files under the data dir are one process's: the instances of a cluster share the log only
	// through the database.
	if w.Enabled && c.MQURL != "" && c.Roles != "submitter" && w.MariaDBURL == "" {
		return &ParamError{Param: "witness-log", Value: "true", Err: fmt.Errorf("a cluster keeps its witness log in MariaDB: set --witness-log-mariadb-url")}
	}
	if w.WitnessesFile != "" && !w.Enabled {
		return &ParamError{Param: "witness-log-witnesses", Value: w.WitnessesFile, Err: fmt.Errorf("has no use without --witness-log")}
	}
	if w.WitnessTimeout <= 0 {
		return &ParamError{Param: "witness-log-witness-timeout", Value: w.WitnessTimeout.String(), Err: fmt.Errorf("must be positive")}
	}
	if w.MonitoringInterval <= 0 {
		return &ParamError{Param: "witness-log-monitoring-interval", Value: w.MonitoringInterval.String(), Err: fmt.Errorf("must be positive")}
	}
	// tessera publishes checkpoints no more often than this; its MySQL storage not more often
	// than once a second.
	least := 100 * time.Millisecond
	if w.MariaDBURL != "" {
		least = time.Second
	}
	if w.CheckpointInterval < least {
		return &ParamError{Param: "witness-log-checkpoint-interval", Value: w.CheckpointInterval.String(), Err: fmt.Errorf("must be at least %s", least)}
	}
	return nil
}

func validateHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("must be host:port: %w", err)
	}
	if port == "" {
		return fmt.Errorf("missing port")
	}
	_ = host // an empty host listens on every interface, as net/http does
	return nil
}

// isLoopback reports whether a listen address is on loopback only; an empty host listens on
// every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validateURL(raw string, schemes ...string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("malformed URL: %w", err)
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok {
		return fmt.Errorf("scheme must be %s", strings.Join(schemes, " or "))
	}
	if u.Host == "" {
		return fmt.Errorf("missing host")
	}
	return nil
}
