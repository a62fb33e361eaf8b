// Package witnesslog is a domain's witness log: the append-only Merkle log of the anchor
// credentials (VCs) the domain witnesses, built on tessera, with checkpoints signed by the
// domain key and the tlog-tiles read API; and Peer, which verifies another domain's log from
// what it serves. The witnessing that appends, and the monitors that run Peer's checks and
// act on their results, live elsewhere.
//
// # The log
//
// Entries are the VC bytes, at most Config.EntryMaxSize each; the leaf hash of an entry is
// its RFC 6962 leaf hash. Checkpoints follow the C2SP checkpoint and signed-note formats: the
// first line (the origin) is the domain's external host followed by "/log" (OriginFor), which
// is also the name of the Ed25519 verifier key (VerifierKey); the key is the domain key, so
// the actor document's publicKey verifies the checkpoints.
//
// # Append: what "final" and "durable" mean
//
// Append returns an index only once the entry is sequenced and integrated into the tree:
// tessera's index future resolves after the batch holding the entry has been written with the
// tree state that includes it (both backends integrate synchronously), so the index is final
// and no later append can take it. Publication is asynchronous: a checkpoint covering the
// index follows within about Config.CheckpointInterval (AwaitCheckpoint waits for it), which
// is the deadline a witness can promise inclusion by.
//
//   - POSIX (embedded, OpenPOSIX): every file (entry bundle, tiles, tree state) is written to a
//     temporary file opened with O_SYNC, renamed into place, and its directory fsynced; the
//     tree state is written last. An index Append returned survives the process being killed
//     and the machine losing power, on a file system that honours fsync. One process appends
//     to a directory at a time.
//   - MariaDB (cluster, OpenMariaDB): a batch is one InnoDB transaction that locks the tree
//     state row, writes bundles and tiles and the new tree state, and commits before the index
//     is returned. It survives the death of any anchord instance (nothing is held in an
//     instance), and the death of the database server as long as the server flushes its redo
//     log at commit (innodb_flush_log_at_trx_commit=1, the default; OpenMariaDB warns
//     otherwise). All instances append to one database; the row lock serialises sequencing,
//     so two instances never assign one index or fork the tree. Any instance may publish a
//     checkpoint (at most one per interval, decided under a row lock); all sign with the
//     domain key, so which one does is invisible to readers. tessera's MySQL storage is used
//     unchanged; this package creates its tables.
//
// An Append whose context ends first returns an error although the entry may still be
// integrated; a caller that retries appends the entry again, at another index, which is
// harmless: either index proves the entry. The same holds when a MariaDB commit succeeds but
// its acknowledgement is lost.
//
// # Cosigning
//
// With Config.Witnessing, checkpoints are served only once cosigned by the witnesses of a
// tessera witness policy (c2sp.org/tlog-witness): Cosign, run by RunCosigner every checkpoint
// interval, hands the storage's latest checkpoint to tessera's own witnessing
// (AppendOptions.WithWitnesses and its CheckpointPublisher) and stores what it returns once the
// quorum is met (or regardless, with FailOpen). It runs outside the storage's locks, so appends
// never wait for a witness. The stored cosigned checkpoint never moves to a smaller tree, and is
// what /log/checkpoint, Checkpoint and AwaitCheckpoint see; Close waits for the storage's own.
//
// # Reading
//
// Register serves /log/checkpoint, /log/tile/<L>/<N>[.p/<W>] and /log/tile/entries/<N>[.p/<W>]
// from the storage, with the exact width a path names. tessera's own client reads it.
//
// # Verifying a peer
//
// Peer fetches through a FetchFunc the caller supplies (so that peer requests are signed,
// bounded and timed as every other request to another domain), with a byte limit for each
// resource. Its verifications tell apart what to wait for (ErrNotCovered), what breaks a
// promise (ErrNotIncluded), what proves the log rewrote itself (*InconsistencyError, carrying
// both signed checkpoints as evidence), and failures to read (any other error), which the
// caller retries. With a Quorum (WithQuorum, from ParseWitnesses) each checkpoint also says
// whether its cosignatures satisfy the policy; WitnessView reads a witness's view of the log.
//
// tessera starts goroutines of its own (batch sequencing, checkpoint publishing) when the log
// is opened; Close ends them. tessera logs through klog, a process-wide logger that this
// package leaves as it finds it.
package witnesslog
