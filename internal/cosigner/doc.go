// Package cosigner makes this domain a c2sp.org/tlog-witness: it cosigns a checkpoint of a
// known log only when the checkpoint is consistent with the last one it cosigned for that log,
// so that a log cannot show two different trees to two verifiers without the witnesses seeing
// it. Witness answers add-checkpoint and serves the latest cosigned checkpoint of each log
// under Prefix; KnownLogs tells which logs it cosigns and with which keys; Key holds the
// cosigning keys, derived from the domain key; EndpointClient is the one HTTP client for the
// operator's witnesses, which this domain asks to cosign its log. The witnessing of this domain's own log by
// others lives in witnesslog, and the monitors that require cosignatures in logmonitor and
// witness.
//
// # add-checkpoint
//
// The answers are the specification's: 400 for a malformed body or an old size larger than
// the checkpoint's, 404 for an unknown origin, 403 when no signature of a trusted key verifies
// (signatures of other keys are ignored), 409 with the latest cosigned size as
// text/x.tlog.size when the old size is not that size, 422 for a bad consistency proof, a
// proof sent with old size 0, a size-0 checkpoint whose root is not the empty tree's, or the
// cosigned size with another root hash; 200 with the cosignature lines otherwise. A checkpoint
// refused as inconsistent although validly signed is logged with its text: it may be half of
// a fork's evidence.
//
// # Cosignatures
//
// Every answer carries an Ed25519 cosignature/v1 line, timestamped, over the whole checkpoint
// body; with ML-DSA-44 enabled, also a subtree/v1 line over the cosigned_message of the whole
// tree (start 0, end the size, the same timestamp). Both keys are derived from the domain key
// with HKDF-SHA256 under labels of their own, so every instance of a cluster signs with the
// same keys and the domain key itself never cosigns.
//
// # Atomicity
//
// The record of a log's latest cosigned checkpoint changes only by
// store.CosignedCheckpointExecutor's compare-and-swap on the (size, root hash) the request was
// checked against, after the checks and before the answer: of two requests checked against
// one record, across any number of instances sharing the database, one wins and the other is
// answered 409. A size is therefore advanced to once, and never cosigned with two root hashes.
package cosigner
