// Package peer is how a domain talks to other domains over HTTP: signed GETs and POSTs (HTTP
// signatures by the domain key, in Orb's form, through httpsig) with byte caps and timeouts, and
// the resolution of other domains' actor documents and signing keys, cached.
//
// It does not decide what to send or when (the federation service does) and it holds no
// queue: a failed request is reported to the caller, who retries.
//
// # Bounds
//
// Every request goes through the outbound guard's client (Config.HTTP, package egress), which
// refuses special-purpose addresses and the node's admin listener at dial time, follows no
// redirects (a signature covers one request target, and a peer must not be able to point our
// signed requests elsewhere) and caps the requests in flight. Every request also has its own
// timeout (Config.Timeout) besides the caller's context; every body read is capped (Fetch's
// maxBytes, Config.MaxDocumentBytes for actor and key documents, a small fixed cap for the
// answer to a POST) and a longer body fails with ErrTooLarge without being read further.
//
// # Actor and key cache
//
// Actor documents are cached in memory (an LRU of Config.CacheSize entries) in front of the
// ap_actors table, and are fresh for Config.CacheTTL from when they were fetched (Orb: 10
// minutes). A stale document is fetched again; when that fails for a reason other than the peer
// saying the actor does not exist, the stale document is used for up to Config.MaxStale more,
// so a peer's brief outage does not stop us from verifying it or delivering to it.
//
// A key id resolves as Orb resolves it: the key document {id, owner, publicKeyPem} is fetched
// (unless an actor cached in memory names the key), then the owner's actor document, which must name the same key id (and, if it embeds the key,
// the same key). An owner whose cached document names another key is fetched afresh once, so a
// rotated key is picked up without waiting for the TTL. Key ids that are DIDs are not resolved
// (ErrKeyNotFound): anchord's peers name their keys by URL. The owner must be on the key id's
// host and port, checked before it is fetched, so resolving a key fetches from one host only.
// The store is not searched by key id: an unknown key id in a request costs no database query
// before anything about the request is verified.
//
// A resolution that failed, for whatever reason, is remembered for Config.KeyFailureTTL: the
// same key id is answered with the same failure, unfetched, until then. Requests that need one
// key at the same time share one resolution. So a flood of requests signed with a failing key
// id costs one fetch per key id and TTL.
package peer
