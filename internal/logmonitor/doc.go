// Package logmonitor checks that the witness logs of other domains keep their append-only
// promise. Its Monitor is the log consistency monitor (task vct-log-consistency-monitor, as
// Orb names it): for each log it is given, it fetches the latest checkpoint, verifies the
// signature with the domain's key, and proves the tree is an extension of the last checkpoint
// it verified.
//
// # Rules
//
//   - A checkpoint is stored only after it verified against the domain's key and, unless it
//     is the first, was proven consistent with the stored one. The stored checkpoint never
//     moves to a smaller tree (store.LogCheckpointExecutor).
//   - An inconsistent log (a fork, a rewritten or removed entry) is reported with a metric, an
//     error log and one dead letter of kind log_inconsistency holding both signed checkpoints
//     and the consistency proof: evidence that stands on its own, since both notes verify
//     with the domain's key. The dead letter and the rejection mark are written in one
//     transaction fenced by the task's permit, so a stale run cannot report twice.
//   - After a report the stored checkpoint stays what it was: every later checkpoint is still
//     checked against it, and a log that comes back to an extension of it advances again.
//     Further inconsistent checkpoints of the same log are counted but not reported again
//     until an operator decides: retrying the dead letter forgets the stored checkpoint (the
//     log's next checkpoint is trusted as a first one); dropping it keeps the watch as it is.
//   - A log that cannot be read, or whose checkpoint does not verify, is an error of that run
//     for that log only; the others are checked regardless.
//   - With a witness policy (Log.Quorum), a checkpoint is accepted only when its cosignatures
//     meet the quorum; one that does not is left aside (OutcomeNotCosigned), unless it
//     contradicts the accepted one, which is evidence whoever cosigned it. Each witness of the
//     policy is also asked for its view of the log (Config.WitnessPrefixes): a witness shown a
//     tree inconsistent with the accepted one saw the other side of a split view, reported the
//     same way, naming the witness.
package logmonitor
