// Reads a Go execution trace (an anchord server's /debug/pprof/trace) and says how one goroutine
// spent its time per interval, or who waited on which lock. A module of its own so that the
// trace reader's dependency never enters anchord's go.mod.
module github.com/anchord/anchord/tools/tracestates

go 1.26.0

require golang.org/x/exp v0.0.0-20260908205506-85c1c2202aba
