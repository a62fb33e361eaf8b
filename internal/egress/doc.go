// Package egress is the only way out of anchord towards other domains: every request that
// federation sends or fetches (deliveries to inboxes, actor, key, WebFinger and host-meta
// fetches, collection pages, CAS files, witness-log tiles, DID documents) passes a Guard.
//
// The Guard is an http.RoundTripper (and Client returns an *http.Client over it that follows no
// redirects). It refuses:
//
//   - a URL whose scheme is not http or https;
//   - any address in a special-purpose range (Classify: loopback, RFC 1918 and unique-local
//     private, link-local, CGNAT 100.64/10, multicast, unspecified, documentation and other
//     reserved ranges, IPv4 and IPv6, IPv4-mapped IPv6 unmapped first), unless
//     Config.Allowed names it; unspecified and multicast addresses stay refused even then;
//   - the node's own admin listener (Config.Refused), always.
//
// The address is checked where the connection is made, in the dialer's Control function, after
// DNS resolution and for every address tried: a name that resolves to a private address, or
// that resolves differently the second time (DNS rebinding), is refused there. A literal
// address is checked before the request waits for a slot.
//
// Requests in flight are capped globally and per host (the URL's host and port); a request
// waits for a slot until its context ends (or Config.Timeout, when it has no deadline), and the
// slot is held until its body is read or closed. Every response body is bounded by
// Config.MaxResponseBytes, every request made through Client by Config.Timeout.
//
// A refusal is a *RefusedError wrapping ErrRefused: the destination will not become
// reachable by trying again, so callers treat it as a permanent failure.
//
// Clients for endpoints the operator configures (the admin CLI's --target, the IPFS node, the
// ledger, the load generator's target, the C2SP witnesses of the witness-log policies) are not
// federation and do not pass the guard; every
// other package is kept from building its own HTTP client or transport by a test in the daemon
// (outbound_test.go).
package egress
