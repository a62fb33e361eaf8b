// Package loadgen is `anchord loadgen`: it generates valid ES256K operations — creates, and
// updates, recovers and deactivates of DIDs it created and saw published — posts them to an
// anchord at a fixed rate or a fixed concurrency for a bounded duration or count, prints a
// progress line every second and a summary: accepted/s, POST latency percentiles, accept →
// resolvable latency (sampled) and errors by code.
//
// To keep the generator's own CPU out of the measurement on a small machine, creates draw their
// update and recovery keys from a small pool (DIDs stay distinct because every create's
// document differs); updates, recovers and deactivates rotate real per-DID keys.
package loadgen
