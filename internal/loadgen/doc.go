// Package loadgen is `anchord loadgen`: it generates valid ES256K operations — creates, and
// updates, recovers and deactivates of DIDs it created and saw published — posts them to an
// anchord at a fixed rate or a fixed concurrency for a bounded duration or count, prints a
// progress line every second and a summary: accepted/s, POST latency percentiles, accept →
// resolvable latency (sampled) and errors by code. With --interval it also prints one line per
// interval (accepted/s, POST p50/p99, accept→resolvable p95 of the samples resolved in it), so a
// long run shows drift; a "resolve" weight in the mix GETs known DIDs (--resolve-dids, an
// --accepted-out file) and reports GET/s.
//
// Latencies are those of answered requests: a request that got no answer (refused, reset, timed
// out) is counted as an error and fails the run, since its target was not there the whole time.
//
// To keep the generator's own CPU out of the measurement on a small machine, creates draw their
// update and recovery keys from a small pool (DIDs stay distinct because every create's
// document differs); updates, recovers and deactivates rotate real per-DID keys.
package loadgen
