// Package config is anchord's configuration: the root Config tree, the default of every
// parameter (written once, as a constant), loading from flags and ANCHORD_* environment
// variables, validation that names the offending parameter, and a redacting slog.LogValue.
//
// Parameter names follow Orb's where the concept is the same; where our name differs from
// Orb's, Orb's is accepted too, so an Orb operator's settings carry over.
// Precedence: command-line flag, then environment variable, then default.
package config

import (
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/batch"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/egress"
	"github.com/anchord/anchord/internal/expiry"
	"github.com/anchord/anchord/internal/federation"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/ipfs"
	"github.com/anchord/anchord/internal/logmonitor"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/param"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/pubsub"
	"github.com/anchord/anchord/internal/pubsub/amqppubsub"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/sqlitestore"
	"github.com/anchord/anchord/internal/submitter"
	"github.com/anchord/anchord/internal/taskmgr"
	"github.com/anchord/anchord/internal/witness"
	"github.com/anchord/anchord/internal/witnesslog"
)

// Defaults of the parameters that belong to no component: where anchord listens and keeps its
// data, how it logs, which shape it runs in. Every other default is the component's own
// constant (batch.TimeoutDefault, opqueue.MaxBacklogDefault, …), which Default refers to.
const (
	HostURLDefault       = "127.0.0.1:8080"
	DataDirDefault       = "./data"
	LogLevelDefault      = "info"
	LogFormatDefault     = "text"
	AnchorBackendDefault = "local"
	RolesDefault         = "all"
	LedgerAPIDefault     = "sawtooth"
	// AdminAddrDefault keeps the admin API and the profiler on loopback.
	AdminAddrDefault = "127.0.0.1:8081"
	// ShutdownTimeoutDefault bounds each stage of the supervisor's ordered shutdown.
	ShutdownTimeoutDefault = 4 * time.Second
	// CASTypeDefault keeps the batch files in the database only.
	CASTypeDefault = "local"
	// MQObserverPoolDefault is mq-observer-pool (Orb's default).
	MQObserverPoolDefault = 5
)

// Config is the root of anchord's configuration.
type Config struct {
	// HostURL is the listen address of the HTTP API (Orb's host-url).
	HostURL string
	// DataDir holds the embedded SQLite database when DatabaseURL is empty.
	DataDir string
	// DatabaseURL selects PostgreSQL (postgres://…); empty means the embedded SQLite store.
	DatabaseURL string
	// DatabaseMaxConns bounds the database connection pool.
	DatabaseMaxConns int
	// MQURL selects RabbitMQ (amqp://…) and the cluster shape; empty means one embedded
	// instance, whose operation queue is its database and which uses no pub/sub.
	MQURL string

	LogLevel  string
	LogFormat string

	HTTP HTTPConfig

	// DIDMethod is the DID method name, with any network segment ("ion:test").
	DIDMethod string
	// MaxOperationsPerDID and MaxDocumentBytes bound what one DID can grow to (400
	// too_many_operations, document_too_large).
	MaxOperationsPerDID int
	MaxDocumentBytes    int
	// SignatureAlgorithms lists the accepted operation signature algorithms (ES256K, EdDSA).
	SignatureAlgorithms string
	// BatchWriterTimeout: a batch is cut once its oldest operation is this old.
	BatchWriterTimeout time.Duration
	// MaxOperationCount: a batch is cut once this many operations are pending (at most this many per batch).
	MaxOperationCount int
	// OpQueueMaxBacklog: above this many unanchored operations, new ones get 503.
	OpQueueMaxBacklog int
	// OpQueueOperationLifespan: a queued operation older than this is parked as expired.
	OpQueueOperationLifespan time.Duration
	// Redelivery* is the retry schedule of failed batches and messages (Orb's mq-redelivery-*).
	RedeliveryMaxAttempts     int
	RedeliveryInitialInterval time.Duration
	RedeliveryMultiplier      float64
	RedeliveryMaxInterval     time.Duration
	// AnchorBackend chooses how anchors become final: "local", "ledger" or "witness".
	AnchorBackend string
	// CASCIDVersion is the CID version of new CAS content (0: Qm…, 1: b…).
	CASCIDVersion int
	// CASType is where the batch files live besides the database: "local" (only there) or
	// "ipfs" (also added to the IPFS node at IPFSURL), Orb's --cas-type.
	CASType string
	// IPFSURL is the IPFS node's RPC API (Kubo), Orb's --ipfs-url.
	IPFSURL string
	// IPFSTimeout bounds each request to the IPFS node, Orb's --ipfs-timeout.
	IPFSTimeout time.Duration
	// SQLiteSynchronous is the embedded store's durability level: full or normal.
	SQLiteSynchronous string
	// SQLiteMmapSize bounds the bytes of the embedded database read through a memory map.
	SQLiteMmapSize int64
	// SQLiteCacheSize is each read connection's page cache in bytes (embedded).
	SQLiteCacheSize int64
	// StateCacheSize bounds the DID states the resolver keeps in memory.
	StateCacheSize int
	// MemoryLimit is the budget of the process's memory in bytes, from which the Go runtime's
	// soft limit (runtime/debug.SetMemoryLimit) is derived: 0 derives it from the caches' sizes
	// (daemon.MemoryLimit), a negative value sets none.
	MemoryLimit int64
	// MQ* configure RabbitMQ in cluster mode (Orb's names where Orb has the parameter).
	MQPrefix                   string
	MQQueueType                string
	MQPublisherChannelPoolSize int
	MQMaxConnectionChannels    int
	MQOpQueuePool              int
	MQObserverPool             int
	// OpQueueTask* drive the per-instance task entries and the op-queue monitor.
	OpQueueTaskMonitorInterval time.Duration
	OpQueueTaskExpiration      time.Duration
	OpQueueMaxOpsToRepost      int
	// TaskManagerCheckInterval is how often the task manager checks its permits.
	TaskManagerCheckInterval time.Duration
	// DataExpiryCheckInterval is the interval of the data-expiry task.
	DataExpiryCheckInterval time.Duration

	// Roles selects what this process runs: "all", or "submitter" (only ledger submitters and
	// the status poller, for scaling them apart from the API).
	Roles string
	// Ledger* configure the ledger anchoring backend (--anchor-backend ledger).
	LedgerURL            string
	LedgerAPI            string
	LedgerServiceID      string
	LedgerAuthorization  string
	LedgerRequestTimeout time.Duration
	// Submitter* configure the batch submitters.
	SubmitterInterval          time.Duration
	SubmitterClaimLimit        int
	SubmitterClaimTTL          time.Duration
	SubmitterConcurrency       int
	SubmitterMaxAttempts       int
	SubmitterBackoffInitial    time.Duration
	SubmitterBackoffMultiplier float64
	SubmitterBackoffMax        time.Duration
	// LedgerStatus* configure the status poller task.
	LedgerStatusPollInterval time.Duration
	LedgerStatusPageSize     int
	LedgerUnknownGrace       time.Duration

	// KeyFile, when set, holds the domain's Ed25519 signing key (PEM PKCS #8, mode 0600);
	// otherwise the key is created at first start and kept in the store.
	KeyFile string
	// LedgerKeyFile, when set, holds the ledger signing key (hex secp256k1, mode 0600).
	LedgerKeyFile string
	// TLSCAFile, when set, names a PEM file of certificate authorities trusted, besides the
	// system's, for the broker (amqps://) and the ledger (https://). PostgreSQL takes its own
	// from --database-url (sslmode=verify-full&sslrootcert=…).
	TLSCAFile string
	// AdminAddr is the listen address of the admin API (/admin/v1) and the profiler
	// (/debug/pprof); they are never served on HostURL.
	AdminAddr string
	// AdminToken is the bearer token every route of the admin listener requires. Empty: the
	// token kept in DataDir/admin-token, made at the first start. Required (explicitly) when
	// AdminAddr is not a loopback address, where the operator must carry the token elsewhere.
	AdminToken string
	// AuthTokensDef and AuthTokens protect the API routes with bearer tokens per path, as
	// Orb's --auth-tokens-def and --auth-tokens do (httpapi.ParseTokenAuth).
	AuthTokensDef string
	AuthTokens    string

	// AllowedOrigins lists, comma-separated, the anchorOrigin values a create or recover may
	// declare (Orb's --allowed-origins); "*" allows any. Empty means this domain's own
	// identifiers only: its external endpoint, actor IRI and did:web.
	AllowedOrigins string

	// Federation configures the domain's ActivityPub service.
	Federation FederationConfig
	// Witness configures the witnessing of anchors (--anchor-backend witness).
	Witness WitnessConfig
	// WitnessLog configures the domain's witness log and the monitor of other domains' logs.
	WitnessLog WitnessLogConfig
	// Cosigner configures this domain as a C2SP tlog-witness of other logs.
	Cosigner CosignerConfig

	// ShutdownTimeout bounds each stage of the ordered shutdown.
	ShutdownTimeout time.Duration
	// HealthTimeout bounds each dependency check of /healthcheck.
	HealthTimeout time.Duration
}

// WitnessConfig configures the witnessed anchor backend and its anchor status monitor (Orb's
// names and meanings).
type WitnessConfig struct {
	// MaxWitnessDelay is how long an Offer is good for; with GracePeriod, how long an anchor
	// waits for proofs before it fails and its operations are queued again.
	MaxWitnessDelay time.Duration
	// GracePeriod is how long after an Offer the monitor looks at the anchor.
	GracePeriod time.Duration
	// MonitorInterval and MaxRecords drive the anchor-status-monitor task.
	MonitorInterval time.Duration
	MaxRecords      int
	// ProofMonitorInterval is the interval of the proof monitor (task vct-monitor), which
	// checks that witnesses logged what they promised. Orb's --vct-monitoring-interval.
	ProofMonitorInterval time.Duration
}

// FederationConfig configures the domain's ActivityPub service (Orb's names and meanings).
type FederationConfig struct {
	// ExternalEndpoint is the domain's public base URL; the actor is
	// <external-endpoint>/services/anchord. Empty means http://<host-url>.
	ExternalEndpoint string
	// EnableDIDDiscovery (did:orb profile): a DID not held here, asked for under a name that
	// says where it lives, is looked up at that domain and its anchor fetched (Orb's DID
	// discovery).
	EnableDIDDiscovery bool
	// EnableUnpublishedOperationStore (did:orb profile): accepted creates and updates apply to
	// their DID's resolution before they are anchored (Orb's unpublished operation store).
	EnableUnpublishedOperationStore bool
	// IncludeUnpublishedOperations and IncludePublishedOperations (did:orb profile) list a
	// DID's unpublished and anchored operations in its resolution metadata, for the domains
	// that resolve it from this one, its anchor origin.
	IncludeUnpublishedOperations bool
	IncludePublishedOperations   bool
	// ResolveFromAnchorOrigin (did:orb profile): a DID whose anchor origin is another domain is
	// resolved there too, and what the origin has that this domain lacks is merged in when
	// Orb's rules hold.
	ResolveFromAnchorOrigin bool
	// PageSize is the size of the pages of the ActivityPub collections.
	PageSize int
	// MaxClockSkew bounds how far a signed request's Date may be from our clock.
	MaxClockSkew time.Duration
	// FollowAuthPolicy and InviteWitnessAuthPolicy decide whom we accept: accept-all or
	// accept-list.
	FollowAuthPolicy        string
	InviteWitnessAuthPolicy string
	// Sync* drive the activity-sync task.
	SyncInterval            time.Duration
	SyncAcceleratedInterval time.Duration
	SyncMinActivityAge      time.Duration
	SyncMaxActivities       int
	// RequestTimeout bounds each request to another domain.
	RequestTimeout time.Duration
	// Inbox* bound what other domains may post to the inbox: body caps (anchor activities and
	// the rest), rates per actor and per domain, and how long a handled activity is kept.
	InboxMaxAnchorActivityBytes int64
	InboxMaxActivityBytes       int64
	InboxActorRateLimit         float64
	InboxActorRateBurst         int
	InboxDomainRateLimit        float64
	InboxDomainRateBurst        int
	InboxExpiryPeriod           time.Duration
	// PeerAllowedAddresses lists, comma-separated, the destinations on special-purpose
	// networks (loopback, private, link-local, CGNAT, …) that requests to other domains may
	// reach: CIDR prefixes or IP:port (egress.ParseAllowed). Empty: public addresses only. The
	// admin listener is refused whatever it says.
	PeerAllowedAddresses string
	// PeerMaxRequests and PeerMaxRequestsPerHost cap the requests to other domains in flight,
	// in all and per host:port.
	PeerMaxRequests        int
	PeerMaxRequestsPerHost int
}

// CosignerConfig configures the domain as a C2SP tlog-witness (docs/design/witness-log.md,
// "anchord as a witness").
type CosignerConfig struct {
	// Enabled serves POST /witness/add-checkpoint and GET /witness/<origin hash>/checkpoint.
	Enabled bool
	// Name is the witness's key name; empty: the external endpoint's host followed by
	// "/witness".
	Name string
	// LogsFile lists the logs cosigned besides those of the domains we follow, of our witnesses
	// and of the domains we witness for: one signed-note verifier key per line, named by the log's origin.
	LogsFile string
	// MLDSA adds an ML-DSA-44 subtree/v1 cosignature to the Ed25519 cosignature/v1 one.
	MLDSA bool
}

// WitnessLogConfig configures the witness log (docs/design/witness-log.md).
type WitnessLogConfig struct {
	// Enabled keeps the log: the domain appends every anchor credential it witnesses, serves
	// the log under /log/ and advertises it in WebFinger. Orb's --vct-enabled.
	Enabled bool
	// MariaDBURL is the database of the log (mysql://user:password@host:port/database), which
	// every instance of a cluster shares; required in a cluster. Empty in the embedded shape:
	// the log is kept in files under <data-dir>/log.
	MariaDBURL string
	// MonitoringInterval is the interval of the log consistency monitor, which checks the logs
	// of the domains we follow and of our witnesses.
	MonitoringInterval time.Duration
	// CheckpointInterval is how often the log signs and publishes a checkpoint: a witness
	// answers once one covers its entry, so under LogRequired it bounds how soon a proof counts.
	CheckpointInterval time.Duration
	// WitnessesFile is a witness policy in tessera's format (witness keys, URLs, groups,
	// quorum): every checkpoint is cosigned by these C2SP witnesses before it is served.
	WitnessesFile string
	// WitnessTimeout bounds one round of cosigning.
	WitnessTimeout time.Duration
	// WitnessFailOpen serves a checkpoint that missed the quorum; by default the last one that
	// met it stays served.
	WitnessFailOpen bool
	// MonitorPolicyFile is a witness policy, in the same format, that another domain's
	// checkpoint must satisfy before the proof monitor and the log consistency monitor accept
	// it; empty: the domain's signature suffices.
	MonitorPolicyFile string
}

// orbDomain is this domain as Orb names it in unpublished DIDs: "<scheme>:<host>" of the
// external endpoint (Orb writes "https:" + host, or "http:" + host in its development mode).
func (c *Config) orbDomain() string {
	u, err := url.Parse(c.ExternalEndpointURL())
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + ":" + u.Host
}

// ExternalEndpointURL is --external-endpoint, or http://<host-url> when it is empty (a host-url
// that listens on every interface is named 127.0.0.1, which only loopback peers can reach).
func (c *Config) ExternalEndpointURL() string {
	if c.Federation.ExternalEndpoint != "" {
		return strings.TrimRight(c.Federation.ExternalEndpoint, "/")
	}
	host, port, err := net.SplitHostPort(c.HostURL)
	if err != nil {
		return "http://" + c.HostURL
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// HTTPConfig holds the HTTP server's limits.
type HTTPConfig struct {
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	MaxBodyBytes int64
	// MaxConnections caps the connections served at once (beyond: 429 too_many_connections).
	MaxConnections int
	// RateLimit is requests per second per client IP (IPv6: per /64), 0 = off; RateBurst is
	// how many at once (0 = one second's worth). Beyond: 429 rate_limited.
	RateLimit float64
	RateBurst int
	// AccessLog logs one line per answered request.
	AccessLog bool
}

// Default returns a Config with every parameter at its default.
func Default() Config {
	redelivery := pubsub.RedeliveryConfig{}.WithDefaults()
	return Config{
		HostURL:          HostURLDefault,
		AdminAddr:        AdminAddrDefault,
		DataDir:          DataDirDefault,
		DatabaseMaxConns: pgstore.MaxConnsDefault,
		LogLevel:         LogLevelDefault,
		LogFormat:        LogFormatDefault,
		HTTP: HTTPConfig{
			ReadTimeout:  httpapi.ReadTimeoutDefault,
			WriteTimeout: httpapi.WriteTimeoutDefault,
			IdleTimeout:  httpapi.IdleTimeoutDefault,
			MaxBodyBytes: httpapi.MaxBodyBytesDefault,
			// Rate limiting is off (0): behind a proxy, or with a load generator on loopback,
			// every request comes from one address.
			MaxConnections: httpapi.MaxConnectionsDefault,
		},
		ShutdownTimeout:            ShutdownTimeoutDefault,
		HealthTimeout:              httpapi.HealthTimeoutDefault,
		DIDMethod:                  sidetree.MethodDefault,
		MaxOperationsPerDID:        sidetree.MaxOperationsPerDIDDefault,
		MaxDocumentBytes:           sidetree.MaxDocumentBytesDefault,
		SignatureAlgorithms:        string(sidetree.ES256K),
		BatchWriterTimeout:         batch.TimeoutDefault,
		MaxOperationCount:          batch.MaxOperationCountDefault,
		OpQueueMaxBacklog:          opqueue.MaxBacklogDefault,
		OpQueueOperationLifespan:   opqueue.LifespanDefault,
		RedeliveryMaxAttempts:      redelivery.MaxAttempts,
		RedeliveryInitialInterval:  redelivery.InitialInterval,
		RedeliveryMultiplier:       redelivery.Multiplier,
		RedeliveryMaxInterval:      redelivery.MaxInterval,
		AnchorBackend:              AnchorBackendDefault,
		CASCIDVersion:              int(cas.CIDv0),
		CASType:                    CASTypeDefault,
		IPFSTimeout:                ipfs.RequestTimeoutDefault,
		SQLiteSynchronous:          sqlitestore.SynchronousDefault,
		SQLiteMmapSize:             sqlitestore.MmapSizeDefault,
		SQLiteCacheSize:            sqlitestore.ReaderCacheSizeDefault,
		StateCacheSize:             observer.StateCacheSizeDefault,
		MQPrefix:                   amqppubsub.PrefixDefault,
		MQQueueType:                string(amqppubsub.QueueTypeDefault),
		MQPublisherChannelPoolSize: amqppubsub.PublisherChannelPoolSizeDefault,
		MQMaxConnectionChannels:    amqppubsub.MaxConnectionChannelsDefault,
		MQOpQueuePool:              opqueue.PoolSizeDefault,
		MQObserverPool:             MQObserverPoolDefault,
		OpQueueTaskMonitorInterval: opqueue.TaskMonitorIntervalDefault,
		OpQueueTaskExpiration:      opqueue.TaskExpirationDefault,
		OpQueueMaxOpsToRepost:      opqueue.MaxOpsToRepostDefault,
		TaskManagerCheckInterval:   taskmgr.CheckIntervalDefault,
		DataExpiryCheckInterval:    expiry.IntervalDefault,
		Roles:                      RolesDefault,
		LedgerAPI:                  LedgerAPIDefault,
		LedgerRequestTimeout:       submitter.RequestTimeoutDefault,
		SubmitterInterval:          submitter.IntervalDefault,
		SubmitterClaimLimit:        submitter.ClaimLimitDefault,
		SubmitterClaimTTL:          submitter.ClaimTTLDefault,
		SubmitterConcurrency:       submitter.ConcurrencyDefault,
		SubmitterMaxAttempts:       submitter.MaxAttemptsDefault,
		SubmitterBackoffInitial:    submitter.BackoffInitialDefault,
		SubmitterBackoffMultiplier: submitter.BackoffMultiplierDefault,
		SubmitterBackoffMax:        submitter.BackoffMaxDefault,
		LedgerStatusPollInterval:   submitter.PollIntervalDefault,
		LedgerStatusPageSize:       submitter.PollPageSizeDefault,
		LedgerUnknownGrace:         submitter.UnknownGraceDefault,
		Federation: FederationConfig{
			PageSize:                federation.PageSizeDefault,
			MaxClockSkew:            federation.MaxClockSkewDefault,
			FollowAuthPolicy:        federation.FollowAuthPolicyDefault,
			InviteWitnessAuthPolicy: federation.InviteWitnessAuthPolicyDefault,
			SyncInterval:            federation.SyncIntervalDefault,
			SyncAcceleratedInterval: federation.SyncAcceleratedIntervalDefault,
			SyncMinActivityAge:      federation.SyncMinActivityAgeDefault,
			SyncMaxActivities:       federation.SyncMaxActivitiesDefault,
			RequestTimeout:          peer.TimeoutDefault,

			InboxMaxAnchorActivityBytes: federation.MaxInboxBytesDefault,
			InboxMaxActivityBytes:       federation.MaxSmallInboxBytesDefault,
			InboxActorRateLimit:         federation.InboxActorRateDefault,
			InboxActorRateBurst:         federation.InboxActorBurstDefault,
			InboxDomainRateLimit:        federation.InboxDomainRateDefault,
			InboxDomainRateBurst:        federation.InboxDomainBurstDefault,
			InboxExpiryPeriod:           federation.InboxKeepDefault,
			PeerMaxRequests:             egress.MaxRequestsDefault,
			PeerMaxRequestsPerHost:      egress.MaxRequestsPerHostDefault,
		},
		Witness: WitnessConfig{
			MaxWitnessDelay: witness.MaxWitnessDelayDefault,
			GracePeriod:     witness.GracePeriodDefault,
			MonitorInterval: witness.MonitorIntervalDefault,
			MaxRecords:      witness.MaxRecordsDefault,

			ProofMonitorInterval: witness.LogProofIntervalDefault,
		},
		WitnessLog: WitnessLogConfig{
			MonitoringInterval: logmonitor.IntervalDefault, CheckpointInterval: witnesslog.CheckpointIntervalDefault,
			WitnessTimeout: witnesslog.WitnessTimeoutDefault,
		},
		Cosigner: CosignerConfig{MLDSA: true},
	}
}

// Redelivery returns the retry schedule of failed batches and messages.
func (c *Config) Redelivery() pubsub.RedeliveryConfig {
	return pubsub.RedeliveryConfig{
		MaxAttempts: c.RedeliveryMaxAttempts, InitialInterval: c.RedeliveryInitialInterval,
		Multiplier: c.RedeliveryMultiplier, MaxInterval: c.RedeliveryMaxInterval,
	}
}

// SidetreeProfile returns the validation profile the configuration selects.
//
// The method "orb" (also written "did:orb", as Orb's DID_NAMESPACE is) selects did:orb's
// profile: Orb's protocol v1.0 parameters and names (sidetree.OrbProfile), whose signature
// algorithms are Orb's; --signature-algorithms then only narrows them.
func (c *Config) SidetreeProfile() sidetree.Profile {
	method := strings.TrimPrefix(c.DIDMethod, "did:")
	if method == sidetree.OrbMethod {
		p := sidetree.OrbProfile(c.orbDomain())
		p.MaxOperationsPerDID, p.MaxDocumentBytes = c.MaxOperationsPerDID, c.MaxDocumentBytes
		if algs := c.SignatureAlgorithms; algs != "" && algs != string(sidetree.ES256K) {
			p.Algorithms = nil
			for _, a := range strings.Split(algs, ",") {
				if a = strings.TrimSpace(a); a != "" {
					p.Algorithms = append(p.Algorithms, sidetree.Algorithm(a))
				}
			}
		}
		return p
	}
	p := sidetree.Profile{
		Method: method, MaxDeltaSize: sidetree.MaxDeltaSizeDefault,
		MaxOperationsPerDID: c.MaxOperationsPerDID, MaxDocumentBytes: c.MaxDocumentBytes,
		OrbBatchFiles: c.DIDMethod == "orb" || strings.HasPrefix(c.DIDMethod, "orb:"),
	}
	for _, a := range strings.Split(c.SignatureAlgorithms, ",") {
		if a = strings.TrimSpace(a); a != "" {
			p.Algorithms = append(p.Algorithms, sidetree.Algorithm(a))
		}
	}
	return p
}

// AllowedOriginList returns --allowed-origins as a list; empty when it is empty.
func (c Config) AllowedOriginList() []string {
	var out []string
	for _, o := range strings.Split(c.AllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// ParamError names the parameter whose value is invalid.
type ParamError = param.Error

// LogValue renders the effective configuration with secrets redacted. It walks the same
// parameter table as the flags, so a new parameter is logged without further code.
func (c Config) LogValue() slog.Value {
	attrs := make([]slog.Attr, 0, 64)
	for _, g := range c.LogGroups() {
		attrs = append(attrs, g[1:]...)
	}
	return slog.GroupValue(attrs...)
}

// logGroups sorts the parameters into the groups LogGroups logs, by name prefix; a parameter
// that matches none is a "server" parameter.
var logGroups = []struct {
	name     string
	prefixes []string
}{
	{"server", nil},
	{"http", []string{"http-"}},
	{"storage", []string{"data-dir", "database-", "sqlite-"}},
	{"sidetree", []string{"did-method", "signature-algorithms", "cas-", "max-operation-count", "batch-writer-timeout"}},
	{"queue", []string{"op-queue-"}},
	{"broker", []string{"mq-"}},
	{"tasks", []string{"task-manager-", "data-expiry-"}},
	{"anchoring", []string{"anchor-", "ledger-", "submitter-"}},
	{"federation", []string{"external-endpoint", "activitypub-", "max-clock-skew", "follow-auth-", "invite-witness-", "sync-", "peer-", "inbox-"}},
	{"witness-log", []string{"witness-log", "tlog-witness"}},
}

// LogGroups renders the effective configuration, secrets redacted, as one attribute list per
// group of parameters: the first attribute is group=<name>, the rest are the group's parameters
// in name order. The daemon logs one line per group, so each line stays readable in text mode
// and a JSON parser sees one small flat object per line.
func (c Config) LogGroups() [][]slog.Attr {
	out := make([][]slog.Attr, len(logGroups))
	for i, g := range logGroups {
		out[i] = []slog.Attr{slog.String("group", g.name)}
	}
	params := c.params()
	sort.SliceStable(params, func(i, j int) bool { return params[i].Name() < params[j].Name() })
	for _, p := range params {
		i := groupOf(p.Name())
		out[i] = append(out[i], slog.Attr{Key: strings.ReplaceAll(p.Name(), "-", "_"), Value: p.LogValue()})
	}
	return out
}

func groupOf(name string) int {
	for i, g := range logGroups {
		for _, prefix := range g.prefixes {
			if strings.HasPrefix(name, prefix) {
				return i
			}
		}
	}
	return 0
}
