// Command tracestates reads a Go execution trace and answers two questions the CPU profile
// cannot: where a goroutine's wall time went, interval by interval, and which goroutines waited
// on a lock and for how long.
//
//	go run . -goroutine 'opqueue.(*Queue).Run' -bucket 100ms trace.out
//
// prints, per bucket, the mean number of runnable goroutines and the milliseconds the first
// goroutine whose stack contains the pattern spent running, runnable (ready, no core), and
// blocked by cause (the write connection of database/sql, a mutex inside SQLite, a system call,
// fdatasync, a channel or select wait named by the innermost function of the project's code).
//
//	go run . -blocked Xpthread_mutex_lock trace.out
//
// sums the time every goroutine spent blocked with a stack containing the pattern, by the
// goroutine's outermost function of the project's code and the innermost SQLite function under
// the pattern. A server's trace: curl -H "Authorization: Bearer $token"
// "http://$admin/debug/pprof/trace?seconds=8" -o trace.out (docs/design/scale.md reads a batch
// cut's two phases this way).
package main
