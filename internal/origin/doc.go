// Package origin resolves a did:orb DID at its anchor origin, as Orb's resolver does with
// --resolve-from-anchor-origin: a DID anchored by another domain may have operations there that
// have not reached this domain yet (accepted and not anchored, or anchored and not delivered),
// and the origin lists them in its resolution metadata (unpublishedOperations,
// publishedOperations) when it runs with Orb's --include-*-operations-in-metadata.
//
// For the latest version of a DID anchored here (published: a long form or an unpublished create
// has no head to merge after, and names whatever anchorOrigin its client wrote), under a name
// other than its unpublished (uAAA) one, whose anchor origin is an http(s) URL of another
// domain, the Resolver:
//
//  1. finds the origin's resolution endpoint the way Orb's client does: /.well-known/did-orb on
//     the origin's host, then WebFinger about that endpoint (links on the origin's own host
//     only; remembered for EndpointTTL);
//  2. resolves the DID there, by the name it was asked for;
//  3. requires the origin to name the same anchor origin;
//  4. merges, through the local resolver, the origin's unpublished operations and its published
//     ones after this domain's head (observer.Resolver.ResolveFromOrigin);
//  5. answers with the merged result only if its document, update and recovery commitments,
//     anchor origin and canonicalId equal the origin's answer; otherwise with the local one.
//
// Every request goes through the caller's fetch (the outbound guard: destinations checked,
// bodies capped, each request timed out), steps 1–3 together are bounded by Config.Timeout
// (the merge of step 4 is local work, bounded by Config.MaxOperations),
// and an origin that failed (unreachable, refused, too slow, a server error, no did:orb
// endpoints) is not asked again for FailureTTL: a failing or slow origin costs a resolution at most the timeout, and then
// nothing. At most Config.MaxInFlight resolutions ask origins at once; one beyond them is
// answered locally. Whatever goes wrong, the local result is the answer; an origin whose answer breaks
// the rules is logged and counted (anchord_origin_resolutions_total{outcome="mismatch"}).
//
// What is not done: an origin named by a did:web or an ipns:// URL (Orb resolves the former's
// LinkedDomains service and reads the latter's host-meta over IPFS) is not asked, nor are the
// alternate resolution endpoints a WebFinger answer names on other hosts (Orb's discovery
// domains).
package origin
