//go:build race

package submitter

// clusterAnchors is the size of the cluster test. The race detector makes secp256k1 signing
// and verification about seven times slower (ledger/sawtooth BenchmarkSubmit: 146 batches/s
// against 2,387 without it), so the race build checks the same properties at 1,000 anchors;
// the 5,000 of the issue run in the normal build.
const clusterAnchors = 1000
