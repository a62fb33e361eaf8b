package config

import (
	"errors"
	"io"

	"github.com/anchord/anchord/internal/param"
)

// params is the table of `anchord serve` parameters. Defaults come from the values already in c
// (see Default), so each is written once.
func (c *Config) params() []param.Param {
	return []param.Param{
		param.String(&c.HostURL, "host-url", "listen address (host:port) of the HTTP API").Env("ORB_HOST_URL"),
		param.String(&c.DataDir, "data-dir", "directory of the embedded SQLite store (used when --database-url is empty)"),
		param.Secret(&c.DatabaseURL, "database-url", "PostgreSQL URL (postgres://…); empty runs on the embedded SQLite store").Env("DATABASE_URL"),
		param.Int(&c.DatabaseMaxConns, "database-max-conns", "maximum open database connections"),
		param.Secret(&c.MQURL, "mq-url", "RabbitMQ URL (amqp://…): instances sharing --database-url and this broker form a cluster; empty runs one embedded instance, whose queue is its database").Env("MQ_URL"),
		param.String(&c.LogLevel, "log-level", "debug, info, warn or error"),
		param.String(&c.LogFormat, "log-format", "text or json"),
		param.Duration(&c.HTTP.ReadTimeout, "http-read-timeout", "maximum time to read a request"),
		param.Duration(&c.HTTP.WriteTimeout, "http-write-timeout", "maximum time to write a response"),
		param.Duration(&c.HTTP.IdleTimeout, "http-idle-timeout", "keep-alive idle timeout").Also("server-idle-timeout").Env("SERVER_IDLE_TIMEOUT"),
		param.Int64(&c.HTTP.MaxBodyBytes, "http-max-body-bytes", "maximum request body size; larger bodies get 413"),
		param.Int(&c.HTTP.MaxConnections, "http-max-connections", "connections served at once; beyond, a connection's request gets 429 too_many_connections and the connection is closed"),
		param.Float(&c.HTTP.RateLimit, "http-rate-limit", "requests per second one client IP (IPv6: one /64) may send; beyond, 429 rate_limited with Retry-After (0: off)"),
		param.Int(&c.HTTP.RateBurst, "http-rate-burst", "requests a client may send at once under --http-rate-limit (0: one second's worth)"),
		param.Bool(&c.HTTP.AccessLog, "access-log", "log one line per answered HTTP request (method, path, route, status, duration)"),
		param.Duration(&c.ShutdownTimeout, "shutdown-timeout", "time allowed for each stage of the ordered shutdown"),
		param.Duration(&c.HealthTimeout, "health-timeout", "time allowed for each dependency check of /healthcheck"),
		param.String(&c.DIDMethod, "did-method", "DID method name, with any network segment (e.g. ion:test); orb (or did:orb) selects did:orb's protocol v1.0 parameters and names").Env("DID_NAMESPACE"),
		param.String(&c.SignatureAlgorithms, "signature-algorithms", "accepted operation signature algorithms, comma-separated: ES256K, EdDSA (with --did-method orb: Orb's EdDSA, ES256, ES256K unless narrowed here)"),
		param.Duration(&c.BatchWriterTimeout, "batch-writer-timeout", "cut a batch once its oldest pending operation is this old (a bare integer is milliseconds, as Orb's)").Env("BATCH_WRITER_TIMEOUT").Millis(),
		param.Int(&c.MaxOperationsPerDID, "max-operations-per-did", "anchored operations one DID may have; beyond, 400 too_many_operations (a deactivate is always accepted)"),
		param.Int(&c.MaxDocumentBytes, "max-document-bytes", "size of a DID's rendered resolution result; an operation that would exceed it gets 400 document_too_large"),
		param.Int(&c.MaxOperationCount, "max-operation-count", "cut a batch once this many operations are pending (MAX_OPERATION_COUNT)"),
		param.Int(&c.OpQueueMaxBacklog, "op-queue-max-backlog", "answer 503 while this many operations are not yet anchored"),
		param.Duration(&c.OpQueueOperationLifespan, "op-queue-operation-lifespan", "park a queued operation as expired after this long").Env("OP_QUEUE_OPERATION_LIFESPAN"),
		param.Int(&c.RedeliveryMaxAttempts, "mq-redelivery-max-attempts", "failed attempts after which an operation or message is parked").Env("MQ_REDELIVERY_MAX_ATTEMPTS"),
		param.Duration(&c.RedeliveryInitialInterval, "mq-redelivery-initial-interval", "first retry wait (of operations, messages and deliveries)").Also("op-queue-repost-initial-delay").Env("MQ_REDELIVERY_INITIAL_INTERVAL"),
		param.Float(&c.RedeliveryMultiplier, "mq-redelivery-multiplier", "growth of the retry wait per attempt").Also("op-queue-repost-multiplier").Env("MQ_REDELIVERY_MULTIPLIER"),
		param.Duration(&c.RedeliveryMaxInterval, "mq-redelivery-max-interval", "longest retry wait").Also("op-queue-repost-max-delay").Env("MQ_REDELIVERY_MAX_INTERVAL"),
		param.String(&c.AnchorBackend, "anchor-backend", "how anchors become final: local (the domain signs them), ledger (a Sawtooth/Splinter ledger commits them) or witness (witness domains sign them under the witness policy)"),
		param.String(&c.Roles, "roles", "what this process runs: all, or submitter (only the ledger submitters and status poller)"),
		param.String(&c.TLSCAFile, "tls-ca-file", "PEM file of extra certificate authorities trusted for amqps:// and https:// ledger connections (PostgreSQL: sslrootcert= in --database-url)"),
		param.String(&c.KeyFile, "key-file", "PEM file (PKCS #8, mode 0600) with the domain's Ed25519 signing key; empty: a key created at first start and kept in the database"),
		param.String(&c.LedgerKeyFile, "ledger-key-file", "file (mode 0600) with the ledger signing key in hex; empty: a key created at first start and kept in the database"),
		param.Secret(&c.LedgerURL, "ledger-url", "REST API of the ledger (anchor-backend ledger), e.g. http://127.0.0.1:8008"),
		param.String(&c.LedgerAPI, "ledger-api", "ledger REST dialect: sawtooth or splinter"),
		param.String(&c.LedgerServiceID, "ledger-service-id", "Splinter scabbard service as circuit::service (empty for Sawtooth)"),
		param.Secret(&c.LedgerAuthorization, "ledger-authorization", "Authorization header sent to Splinter, if it requires one"),
		param.Duration(&c.LedgerRequestTimeout, "ledger-request-timeout", "bound on each ledger request (at most half of --submitter-claim-ttl)"),
		param.Duration(&c.SubmitterInterval, "submitter-interval", "pause between a submitter's claim rounds when idle"),
		param.Int(&c.SubmitterClaimLimit, "submitter-claim-limit", "ledger batches a submitter claims at once (claim_limit)"),
		param.Duration(&c.SubmitterClaimTTL, "submitter-claim-ttl", "a claim not settled within this time may be taken by another submitter"),
		param.Int(&c.SubmitterConcurrency, "submitter-concurrency", "ledger requests in flight per submitter"),
		param.Int(&c.SubmitterMaxAttempts, "submitter-max-attempts", "failed submissions after which a batch is parked and its anchor's operations requeued"),
		param.Duration(&c.SubmitterBackoffInitial, "submitter-backoff-initial", "first wait after a retryable ledger answer"),
		param.Float(&c.SubmitterBackoffMultiplier, "submitter-backoff-multiplier", "growth of that wait per attempt"),
		param.Duration(&c.SubmitterBackoffMax, "submitter-backoff-max", "longest wait between submissions of a batch"),
		param.Duration(&c.LedgerStatusPollInterval, "ledger-status-poll-interval", "interval of the ledger status poller task"),
		param.Int(&c.LedgerStatusPageSize, "ledger-status-page-size", "submitted batches the poller checks per round"),
		param.Duration(&c.LedgerUnknownGrace, "ledger-unknown-grace", "a submitted batch the ledger does not know after this long is checked again and resubmitted"),
		param.Int(&c.StateCacheSize, "state-cache-size", "DID states the resolver keeps in memory with their rendered resolution results, about 1.3 KiB each; resolving a DID not among them reads the database and applies its operations again"),
		param.Int64(&c.MemoryLimit, "memory-limit", "budget of the process's memory in bytes: the Go runtime's soft limit is this less the embedded database's page caches, so the collector runs more often as the heap nears it instead of letting garbage double the caches' footprint (0: 360 MiB plus 2 KiB per --state-cache-size entry; negative: none, or GOMEMLIMIT when that is set)"),
		param.String(&c.SQLiteSynchronous, "sqlite-synchronous", "embedded store durability: full (fsync every commit; survives power loss) or normal (survives a killed process, may lose the last commits on power loss)"),
		param.Int64(&c.SQLiteMmapSize, "sqlite-mmap-size", "bytes of the embedded database read through a memory map (file pages the kernel can drop, counted in RSS); beyond, pages are read into each connection's cache (0: no map)"),
		param.Int64(&c.SQLiteCacheSize, "sqlite-cache-size", "bytes of page cache per read connection of the embedded database (8 of them), for pages past the memory map, taken from --memory-limit's budget"),
		param.String(&c.MQPrefix, "mq-prefix", "RabbitMQ exchange name and queue-name prefix; instances sharing it form one cluster"),
		param.String(&c.MQQueueType, "mq-queue-type", "RabbitMQ queue type: classic (measured faster on one node) or quorum"),
		param.Int(&c.MQPublisherChannelPoolSize, "mq-publisher-channel-pool-size", "pooled publisher channels (publishes in flight at once)").Env("MQ_PUBLISHER_POOL"),
		param.Int(&c.MQMaxConnectionChannels, "mq-max-connection-channels", "channels per connection before another connection is opened").Also("mq-max-connection-subscriptions").Env("MQ_MAX_CONNECTION_CHANNELS"),
		param.Int(&c.MQOpQueuePool, "mq-op-queue-pool", "operation messages handled at once per instance (Orb: 5; anchord group-commits them, so more in flight means fewer, larger commits)").Also("mq-opqueue-pool", "op-queue-pool").Env("MQ_OPQUEUE_POOL"),
		param.Int(&c.MQObserverPool, "mq-observer-pool", "concurrent consumers of the anchor topic per instance").Env("MQ_OBSERVER_POOL"),
		param.Duration(&c.OpQueueTaskMonitorInterval, "op-queue-task-monitor-interval", "how often an instance refreshes its task entry, and the op-queue monitor runs").Env("OP_QUEUE_TASK_MONITOR_INTERVAL"),
		param.Duration(&c.OpQueueTaskExpiration, "op-queue-task-expiration", "an instance whose task entry is older is presumed dead and its operations reposted").Env("OP_QUEUE_TASK_EXPIRATION"),
		param.Int(&c.OpQueueMaxOpsToRepost, "op-queue-max-ops-to-repost", "operations of dead instances reposted per monitor run").Env("OP_QUEUE_MAX_OPS_TO_REPOST"),
		param.Duration(&c.TaskManagerCheckInterval, "task-manager-check-interval", "how often the task manager checks its permits").Env("TASK_MANAGER_CHECK_INTERVAL"),
		param.Duration(&c.DataExpiryCheckInterval, "data-expiry-check-interval", "interval of the data-expiry task (expired queue rows are parked, never dropped)").Env("DATA_EXPIRY_CHECK_INTERVAL"),
		param.String(&c.AdminAddr, "admin-addr", "listen address of the admin API (/admin/v1) and the profiler (/debug/pprof); a non-loopback address needs --admin-token"),
		param.Secret(&c.AdminToken, "admin-token", "bearer token required by every route of the admin listener; empty: the one kept in <data-dir>/admin-token (made 0600 at the first start), which anchord admin reads"),
		param.String(&c.AuthTokensDef, "auth-tokens-def", "bearer tokens per API path, as Orb: <path-regex>|<read names joined by &>|<write names>, comma-separated; first match decides, no match is open").Env("ORB_AUTH_TOKENS_DEF"),
		param.Secret(&c.AuthTokens, "auth-tokens", "the tokens those definitions name: name=secret, comma-separated").Env("ORB_AUTH_TOKENS"),
		param.String(&c.CASType, "cas-type", "where batch files live besides the database: local, or ipfs (also added to the node at --ipfs-url, and read from it when missing here)").Env("CAS_TYPE"),
		param.Secret(&c.IPFSURL, "ipfs-url", "RPC API of the IPFS (Kubo) node for --cas-type ipfs, e.g. http://127.0.0.1:5001").Env("IPFS_URL"),
		param.Duration(&c.IPFSTimeout, "ipfs-timeout", "bound on each request to the IPFS node").Env("IPFS_TIMEOUT"),
		param.Bool(&c.Federation.EnableDIDDiscovery, "enable-did-discovery", "did:orb profile: on a miss for a name with a domain hint or a hashlink link, ask that domain's WebFinger for the DID and apply its anchor (Orb's DID discovery); the first resolution answers not found, a retry finds it").Env("DID_DISCOVERY_ENABLED"),
		param.Bool(&c.Federation.EnableUnpublishedOperationStore, "enable-unpublished-operation-store", "did:orb profile: accepted creates and updates show in their DID's resolution before they are anchored (Orb's unpublished operation store)").Env("UNPUBLISHED_OPERATION_STORE_ENABLED"),
		param.Bool(&c.Federation.IncludeUnpublishedOperations, "include-unpublished-operations-in-metadata", "did:orb profile: list a DID's unpublished operations in its resolution metadata (what a domain resolving from this one, the DID's anchor origin, merges)").Env("INCLUDE_UNPUBLISHED_OPERATIONS_IN_METADATA"),
		param.Bool(&c.Federation.IncludePublishedOperations, "include-published-operations-in-metadata", "did:orb profile: list a DID's anchored operations in its resolution metadata").Env("INCLUDE_PUBLISHED_OPERATIONS_IN_METADATA"),
		param.Bool(&c.Federation.ResolveFromAnchorOrigin, "resolve-from-anchor-origin", "did:orb profile: resolve a DID whose anchor origin is another domain there too, and answer with what the origin lists beyond what this domain holds when document, commitments, origin and canonicalId agree (Orb's rules); an origin that fails, is slow or breaks the rules leaves the local answer").Env("RESOLVE_FROM_ANCHOR_ORIGIN"),
		param.String(&c.Federation.ExternalEndpoint, "external-endpoint", "public base URL of this domain; its ActivityPub actor is <external-endpoint>/services/anchord (empty: http://<host-url>)").Env("ORB_EXTERNAL_ENDPOINT"),
		param.Int(&c.Federation.PageSize, "activitypub-page-size", "items per page of the ActivityPub collections").Env("ACTIVITYPUB_PAGE_SIZE"),
		param.Duration(&c.Federation.MaxClockSkew, "max-clock-skew", "how far the Date of a signed request from another domain may be from our clock").Env("MAX_CLOCK_SKEW"),
		param.String(&c.Federation.FollowAuthPolicy, "follow-auth-policy", "whom we accept as followers: accept-all, or accept-list (anchord admin acceptlist --type follow)").Env("FOLLOW_AUTH_POLICY"),
		param.String(&c.Federation.InviteWitnessAuthPolicy, "invite-witness-auth-policy", "whose invitations to witness we accept: accept-all, or accept-list (--type invite-witness)").Env("INVITE_WITNESS_AUTH_POLICY"),
		param.Duration(&c.Federation.SyncInterval, "sync-interval", "interval of the activity-sync task, which pulls what delivery missed from followed domains").Env("ANCHOR_EVENT_SYNC_INTERVAL"),
		param.Duration(&c.Federation.SyncAcceleratedInterval, "sync-accelerated-interval", "interval of the activity sync after a run that hit --sync-max-activities").Env("ANCHOR_EVENT_SYNC_ACCELERATED_INTERVAL"),
		param.Duration(&c.Federation.SyncMinActivityAge, "sync-min-activity-age", "the activity sync leaves younger activities to live delivery").Env("ANCHOR_EVENT_SYNC_MIN_ACTIVITY_AGE"),
		param.Int(&c.Federation.SyncMaxActivities, "sync-max-activities", "activities the activity sync queues per run").Env("ANCHOR_EVENT_SYNC_MAX_ACTIVITIES"),
		param.Duration(&c.Witness.MaxWitnessDelay, "max-witness-delay", "how long an Offer to witnesses is good for; an anchor without enough proofs after it and the grace period fails and its operations are queued again").Env("MAX_WITNESS_DELAY"),
		param.Duration(&c.Witness.GracePeriod, "anchor-status-in-process-grace-period", "how long after an Offer the anchor status monitor looks at the anchor and re-offers it to other witnesses").Env("ANCHOR_STATUS_IN_PROCESS_GRACE_PERIOD"),
		param.Duration(&c.Witness.MonitorInterval, "anchor-status-monitoring-interval", "interval of the anchor-status-monitor task").Env("ANCHOR_STATUS_MONITORING_INTERVAL"),
		param.Int(&c.Witness.MaxRecords, "anchor-status-max-records", "anchors the anchor status monitor looks at per run").Env("ANCHOR_STATUS_MAX_RECORDS"),
		param.Duration(&c.Witness.ProofMonitorInterval, "vct-monitoring-interval", "interval of the proof monitor (vct-monitor task), which checks that witnesses logged the credentials they promised to").Also("vct-proof-monitoring-interval").Env("VCT_PROOF_MONITORING_INTERVAL"),
		param.Int64(&c.Federation.InboxMaxAnchorActivityBytes, "inbox-max-anchor-activity-bytes", "largest Create, Announce or Offer the inbox takes (they carry an anchor's linkset); larger bodies get 413 before their signature is checked"),
		param.Int64(&c.Federation.InboxMaxActivityBytes, "inbox-max-activity-bytes", "largest activity of any other type (Follow, Invite, Accept, Reject, Undo, Like) the inbox takes; larger ones get 413"),
		param.Float(&c.Federation.InboxActorRateLimit, "inbox-actor-rate-limit", "activities per second one actor may post to the inbox; beyond, 429 rate_limited with Retry-After (per instance)"),
		param.Int(&c.Federation.InboxActorRateBurst, "inbox-actor-rate-burst", "activities one actor may post at once under --inbox-actor-rate-limit"),
		param.Float(&c.Federation.InboxDomainRateLimit, "inbox-domain-rate-limit", "activities per second all the actors of one domain (scheme, host and port) may post together"),
		param.Int(&c.Federation.InboxDomainRateBurst, "inbox-domain-rate-burst", "activities one domain may post at once under --inbox-domain-rate-limit"),
		param.Duration(&c.Federation.InboxExpiryPeriod, "inbox-expiry-period", "how long a handled inbox activity is kept before the data-expiry task deletes it (queued and parked ones stay)"),
		param.Duration(&c.Federation.RequestTimeout, "peer-request-timeout", "bound on each request to another domain (actor, key, inbox, collection page, CAS file), waiting for a slot included").Also("http-timeout").Env("HTTP_TIMEOUT"),
		param.String(&c.Federation.PeerAllowedAddresses, "peer-allowed-addresses", "destinations on loopback, private, link-local, CGNAT or other special-purpose networks that requests to other domains may reach, comma-separated: CIDR prefixes (10.1.0.0/16) or IP:port (127.0.0.1:8443); empty: public addresses only. The admin listener is refused always"),
		param.Int(&c.Federation.PeerMaxRequests, "peer-max-requests", "requests to other domains in flight at once; beyond, a request waits for a slot until its timeout"),
		param.Int(&c.Federation.PeerMaxRequestsPerHost, "peer-max-requests-per-host", "requests in flight to one host:port of another domain"),
		param.Int(&c.CASCIDVersion, "cas-cid-version", "CID version of stored batch files: 0 (Qm…, ipfs add's default) or 1").Also("cid-version").Env("CID_VERSION"),
		param.Bool(&c.WitnessLog.Enabled, "witness-log", "keep a witness log: append every anchor credential this domain witnesses to a tlog-tiles log served under /log/ and advertised in WebFinger").Also("vct-enabled").Env("VCT_ENABLED"),
		param.Secret(&c.WitnessLog.MariaDBURL, "witness-log-mariadb-url", "MariaDB database of the witness log (mysql://user:password@host:port/database), shared by every instance; required in a cluster, empty keeps the log in files under <data-dir>/log"),
		param.Duration(&c.WitnessLog.CheckpointInterval, "witness-log-checkpoint-interval", "how often the witness log signs and publishes a checkpoint (at least 100ms; 1s with MariaDB); a witness answers an Offer once a checkpoint covers the credential"),
		param.Duration(&c.WitnessLog.MonitoringInterval, "witness-log-monitoring-interval", "interval of the log consistency monitor, which checks the logs of followed domains and of witnesses").Also("vct-log-monitoring-interval").Env("VCT_LOG_MONITORING_INTERVAL"),
		param.String(&c.WitnessLog.WitnessesFile, "witness-log-witnesses", "witness policy file (tessera's format: witness <name> <vkey> <url>, group, quorum): every checkpoint of the log is cosigned by these C2SP witnesses before /log/checkpoint serves it"),
		param.Duration(&c.WitnessLog.WitnessTimeout, "witness-log-witness-timeout", "bound on one round of asking the witnesses to cosign a checkpoint"),
		param.Bool(&c.WitnessLog.WitnessFailOpen, "witness-log-witness-fail-open", "serve a checkpoint that missed the witnesses' quorum (default: keep serving the last one that met it)"),
		param.String(&c.WitnessLog.MonitorPolicyFile, "witness-log-monitor-policy", "witness policy file another domain's checkpoints must satisfy before the proof and log consistency monitors accept them (empty: the domain's signature suffices)"),
		param.Bool(&c.Cosigner.Enabled, "tlog-witness", "be a C2SP tlog-witness: cosign the checkpoints of known logs at /witness/add-checkpoint when consistent with the last one cosigned (the logs of followed domains, of our witnesses and of the domains we witness for are known)"),
		param.String(&c.Cosigner.Name, "tlog-witness-name", "key name of this witness's cosignatures (empty: <external host>/witness)"),
		param.String(&c.Cosigner.LogsFile, "tlog-witness-logs", "file of further logs this witness cosigns: one signed-note verifier key per line, its name the log's origin"),
		param.Bool(&c.Cosigner.MLDSA, "tlog-witness-ml-dsa", "add an ML-DSA-44 subtree/v1 cosignature to the Ed25519 cosignature/v1 one"),
		param.String(&c.AllowedOrigins, "allowed-origins", "anchorOrigin values a create or recover may declare, comma-separated; * allows any; empty: only this domain (its external endpoint, actor IRI or did:web)").Env("ALLOWED_ORIGINS"),
	}
}

// orbRefused are Orb's parameters that anchord has no knob for: set by flag or by Orb's
// environment variable, each fails the start with a line that says what to use instead, rather
// than being ignored. docs/design/orb-parameters.md lists every Orb parameter.
func orbRefused() []param.Param {
	return []param.Param{
		param.Refused("http-dial-timeout", "--peer-request-timeout bounds each request to another domain, its dial included").Env("HTTP_DIAL_TIMEOUT"),
		param.Refused("server-read-header-timeout", "--http-read-timeout bounds reading the whole request, headers and body").Env("SERVER_READ_HEADER_TIMEOUT"),
		param.Refused("database-timeout", "Orb's applies to MongoDB only; anchord bounds each database call by its component's deadline, and the connect timeout is connect_timeout= in --database-url").Env("DATABASE_TIMEOUT"),
		param.Refused("sync-timeout", "anchord resolves no configuration from a key server at start, so there is nothing to time out").Env("ORB_SYNC_TIMEOUT"),
		param.Refused("mq-connect-max-retries", "anchord waits for an unreachable broker until it is stopped (a refusal stops it at once); bound the wait with the supervisor's start timeout").Env("MQ_CONNECT_MAX_RETRIES"),
		param.Refused("mq-outbox-pool", "deliveries are rows of the database, sent by each instance's deliverer; the broker only wakes it").Env("MQ_OUTBOX_POOL"),
		param.Refused("mq-inbox-pool", "inbox activities are rows of the database, handled by each instance's inbox processor; the broker only wakes it").Env("MQ_INBOX_POOL"),
		param.Refused("mq-anchor-linkset-pool", "anchors reach the observer through the anchor topic: use --mq-observer-pool").Env("MQ_ANCHOR_LINKSET_POOL"),
		param.Refused("op-queue-max-contiguous-operations-with-err", "anchord's queue is a database table, which needs no de-fragmentation").Env("OP_QUEUE_MAX_CONTIGUOUS_OPERATIONS_WITH_ERR"),
		param.Refused("op-queue-max-contiguous-operations-without-err", "anchord's queue is a database table, which needs no de-fragmentation").Env("OP_QUEUE_MAX_CONTIGUOUS_OPERATIONS_WITHOUT_ERR"),
	}
}

// Load builds the `anchord serve` configuration from defaults, environment and args, and
// validates it. With --help it writes the parameter table to out and returns param.ErrHelp.
func Load(args []string, lookupEnv func(string) (string, bool), out io.Writer) (Config, error) {
	c := Default()
	params := c.params()
	for i, p := range params {
		g := groupOf(p.Name())
		params[i] = p.InGroup(logGroups[g].name, g)
	}
	sources, err := param.ParseSources("serve", args, lookupEnv, append(params, orbRefused()...), out)
	if err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		// Name the variable that set the value, when no flag did (DATABASE_URL, not
		// ANCHORD_DATABASE_URL, for an Orb deployment's MongoDB URL).
		var pe *ParamError
		if errors.As(err, &pe) && pe.Env == "" {
			pe.Env = sources[pe.Param]
		}
		return Config{}, err
	}
	return c, nil
}
