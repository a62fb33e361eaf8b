// Package taskmgr runs periodic singleton tasks (data expiry, the op-queue monitor, the anchor
// status monitor, ...) on one instance of the cluster at a time, each under a permit: a row of
// task_permits in the shared database. It replaces Orb's task manager, whose permits are a plain
// get and put compared on host clocks and whose tasks can overlap themselves (Orb at HEAD starts
// a second run while the first is still going).
//
// # Rules
//
//   - Every time comparison is the database's (store.TaskExecutor): a permit is stale when its
//     updated_at is older than CheckInterval + the task's interval, and a task is due when its
//     interval has passed since last_run_at, the end of its last run.
//   - Acquiring, renewing and taking over is one conditional statement; the term increases on
//     every change of holder. Starting a run is conditional on holder, term, status idle and
//     due-ness, so a task never starts a second run while one is in progress (here or
//     anywhere) and never runs early. Refreshes and the end of a run are fenced by holder and
//     term.
//   - The holder renews every CheckInterval (never later: the check jitter only shortens it),
//     and refreshes a running task's permit every min(CheckInterval, threshold/3).
//   - Trust window: a run is cancelled (context cause ErrPermitUntrusted) when no refresh has
//     succeeded for threshold − threshold/5, measured on the monotonic clock from the moment
//     the last successful refresh (or the Start) was sent; and at once (ErrPermitLost) when a
//     refresh finds another holder. Refreshes go on until the task has returned.
//   - On shutdown the manager cancels its runs, waits for them, finishes them and releases its
//     permits, so another instance takes them at its next check rather than after the
//     threshold.
//
// # Fencing contract for tasks
//
// A run's context is cancelled when the permit is lost, but a task may be past its last check
// of the context when another instance takes over (a pause, a slow statement). So a write that
// must not happen twice (reposting another instance's operations, completing an anchor) is made
// in a transaction that first calls Manager.Fence(ctx, tx, taskID, term) with the term the run
// was given, and is rolled back when Fence fails. Writes that are harmless twice (deleting
// expired rows) may skip it, but fencing them too stops a stale run at its next batch.
//
// # States
//
// The permit row (database):
//
//	            acquire: no row
//	(no row) ──────────────────────▶ idle(A, 1)
//
//	idle(A,t) ──start: A,t, due──▶ running(A,t) ──finish: A,t──▶ idle(A,t), last_run_at = now
//	                                 │    ▲
//	                                 └────┘ refresh: A,t (updated_at = now)
//
//	any(A,t) ──acquire by A under t (renewal)──▶ same status (A,t), updated_at = now
//	any(A,t) ──acquire by B: stale, or released──▶ idle(B, t+1)
//	any(A,t) ──acquire by A under another term (A restarted)──▶ idle(A, t+1)
//	any(A,t) ──release: A,t──▶ idle('', t)
//
// One task in one manager:
//
//	           acquire ok                start ok
//	not held ─────────────▶ held, idle ─────────────▶ running
//	   ▲  ▲                   │    ▲                     │ the task returned (cancelled first
//	   │  └─ acquire refused, │    └───── finish ok ─────┤ if a refresh found another holder,
//	   │     start: lost ─────┘                          │ or the trust window ended)
//	   └──────────────── finish: ErrLeaseLost ───────────┘
//
// Shutdown, from any state: cancel the run, wait for it, finish it, release the permit.
//
// A Finish that fails for another reason, or a Start whose answer is lost, leaves the task
// "finish pending": the next check finishes it (Finish is idempotent) before anything else.
//
// Accelerated intervals: a task may set NextIntervalFunc (Orb's RegisterTaskEx). The shorter
// interval is this instance's and is not stored; a task with a backlog should rather work
// through it within its run, in bounded, fenced batches, where its permit stays refreshed.
package taskmgr
