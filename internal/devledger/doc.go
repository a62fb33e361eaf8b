// Package devledger is a development ledger: an HTTP server that speaks the Sawtooth REST API
// (POST /batches, GET and POST /batch_statuses) and the Splinter scabbard batch routes
// (POST /scabbard/{circuit}/{service}/batches, GET …/batch_statuses), so that anchord's batch
// submitter and its ledger clients can be run and tested without a Sawtooth network. It is a
// stand-in, not a ledger: state lives in memory and is gone when the process ends, there is one
// node, no consensus, no blocks, and one transaction processor (the anchord family).
//
// What it does like a validator:
//
//   - It decodes each BatchList and verifies every batch and transaction signature (secp256k1
//     over SHA-256 of the header bytes, low-S), the batch header's transaction ids, the
//     batcher key, and each payload's SHA-512 (sawtooth.VerifyBatch). A malformed or badly
//     signed BatchList is refused with 400 and a Sawtooth-shaped error body
//     {"error":{"code","title","message"}} using the real API codes (30, 34, 35, 42; 43, 46,
//     60, 66 for status queries); on the scabbard routes with scabbard's {"code","message"}.
//   - An accepted batch is PENDING for Config.CommitDelay, then settled in acceptance order:
//     COMMITTED, or INVALID with a message per refused transaction when the anchord processor
//     refuses it (wrong family or version, a payload that is not "<count>.<reference>", inputs
//     or outputs without the anchor's address, or an anchor already recorded in state).
//   - A batch id it already holds (per scope: Sawtooth routes share one scope, each scabbard
//     circuit::service has its own) is answered 202 again and counted as a duplicate, never
//     recorded or committed twice.
//
// Where it differs, on purpose: a batch of an unknown family is INVALID here (a validator
// would keep it PENDING until such a processor registers); the wait parameter of the status
// routes is ignored (answers are immediate); status queries never meet injected faults.
//
// Faults (FaultConfig) are drawn per submission from a seed, so runs are reproducible:
// 503, 429 (bodyless on scabbard), 400 for a good batch, a hang past the client's timeout
// (after recording the batch, so the client cannot tell whether it was taken), a lost batch
// (202, never recorded, stays UNKNOWN) and an invalid batch (recorded, later INVALID).
//
// Counters are served at GET /devledger/stats as JSON (Stats) and as Prometheus metrics
// anchord_devledger_*; GET /metrics serves Config.Gatherer when one is set.
package devledger
