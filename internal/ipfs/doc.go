// Package ipfs is a small client of the Kubo RPC API (/api/v0): it adds files so that the node
// names them with the CIDs anchord's cas package computes, reads them back with a size limit,
// pins them and tells whether the node holds them. It does not store anything itself and does
// not retry; the CAS store that uses it decides what a failure means.
//
// # Same CIDs as cas
//
// cas.ComputeCID reproduces `ipfs add` with Kubo's historic defaults. Kubo lets a node's config
// change those defaults (Import.CidVersion, Import.UnixFSRawLeaves, Import.UnixFSChunker, …), and
// with --cid-version=1 it switches raw leaves on unless told otherwise. Add therefore sends every
// option that decides the DAG explicitly:
//
//	cid-version=0|1  raw-leaves=false  chunker=size-262144  hash=sha2-256
//	trickle=false    max-file-links=174  inline=false  pin=true
//
// One setting has no request option: Import.UnixFSPBNodeFieldOrder must stay "links-first"
// (Kubo's default). Add recomputes the CID locally and fails with ErrMismatch when the node
// answers another one, so a node configured differently is reported, never silently used.
//
// # Trusting what the node returns
//
// Cat returns the node's bytes unchecked. Get is Cat followed by Verify, which recomputes the
// CID with cas and compares: a caller that uses the bytes (as opposed to copying them elsewhere
// under their CID) uses Get. Verify knows only the DAGs cas builds (dag-pb leaves, balanced
// layout, 256 KiB chunks); a CID of another shape is reported as unverifiable, not as valid.
//
// # Errors
//
// Every error is prefixed with the operation ("ipfs add: …"). A request that never got an
// answer (connection refused, timeout, reset) wraps ErrUnavailable: the node is down or slow,
// and the same request may succeed later. An answer that is an error is an *Error with the
// node's HTTP status and message. Cat and Get above their limit wrap ErrTooLarge.
package ipfs
