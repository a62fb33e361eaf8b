package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

// ours marks the project's functions in a stack.
const ours = "github.com/anchord/anchord/"

// The states a followed goroutine's time is split into; blocked time whose stack names none of
// these causes is "wait:" and the innermost function of ours (or the runtime's reason).
const (
	stateRunning  = "running"
	stateRunnable = "runnable"
	stateConn     = "sql-conn"     // waiting for a database/sql connection (SQLite's one writer)
	stateMutex    = "sqlite-mutex" // a mutex inside modernc's SQLite, a Go mutex there
	stateFsync    = "fsync"
	stateSyscall  = "syscall"
)

var columns = []string{stateRunning, stateRunnable, stateConn, stateMutex, stateFsync, stateSyscall}

func funcs(st trace.Stack) []string {
	var out []string
	for f := range st.Frames() {
		out = append(out, f.Func)
	}
	return out
}

// label names a goroutine by the outermost function of ours in its stack, the supervisor's
// and errgroup's wrappers left out.
func label(fs []string) string {
	for _, f := range slices.Backward(fs) {
		if strings.Contains(f, ours) && !strings.Contains(f, "supervisor") {
			return f
		}
	}
	if len(fs) > 0 {
		return fs[len(fs)-1]
	}
	return ""
}

func classify(to trace.GoState, reason string, fs []string) string {
	has := func(s string) bool {
		return slices.ContainsFunc(fs, func(f string) bool { return strings.Contains(f, s) })
	}
	switch to {
	case trace.GoRunning:
		return stateRunning
	case trace.GoRunnable:
		return stateRunnable
	case trace.GoSyscall:
		if has("datasync") || has("Fsync") || has("fsync") {
			return stateFsync
		}
		return stateSyscall
	case trace.GoWaiting:
		switch {
		case has("Xpthread_mutex_lock"):
			return stateMutex
		case has("database/sql.(*DB).conn"):
			return stateConn
		}
		for _, f := range fs {
			if strings.Contains(f, ours) {
				return "wait:" + f[strings.LastIndex(f, "/")+1:]
			}
		}
		return "wait:" + reason
	}
	return to.String()
}

// Bucket is one interval of a Timeline.
type Bucket struct {
	Start time.Duration
	// Runnable is the mean number of runnable goroutines of the whole process.
	Runnable float64
	States   map[string]time.Duration
}

// Timeline is how one goroutine spent each interval of a trace.
type Timeline struct {
	Goroutine string
	Bucket    time.Duration
	Buckets   []Bucket
}

type events struct {
	r     *trace.Reader
	first trace.Time
	last  trace.Time
}

func newEvents(r io.Reader) (*events, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read trace: %w", err)
	}
	return &events{r: tr}, nil
}

// each calls f with every goroutine state transition of the trace, its transition and its
// goroutine's stack as function names.
func (e *events) each(f func(ev trace.Event, st trace.StateTransition, fs []string)) error {
	for {
		ev, err := e.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read trace: %w", err)
		}
		st := ev.StateTransition()
		f(ev, st, funcs(st.Stack))
	}
}

// next returns the next goroutine state transition, or io.EOF.
func (e *events) next() (trace.Event, error) {
	for {
		ev, err := e.r.ReadEvent()
		if err != nil {
			return ev, err
		}
		if e.first == 0 {
			e.first = ev.Time()
		}
		e.last = ev.Time()
		if ev.Kind() == trace.EventStateTransition && ev.StateTransition().Resource.Kind == trace.ResourceGoroutine {
			return ev, nil
		}
	}
}

// ReadTimeline follows the first goroutine whose stack contains pattern through the trace in r.
func ReadTimeline(r io.Reader, pattern string, bucket time.Duration) (*Timeline, error) {
	if bucket <= 0 {
		return nil, errors.New("bucket must be positive")
	}
	e, err := newEvents(r)
	if err != nil {
		return nil, err
	}
	tl := &Timeline{Bucket: bucket}
	at := func(i int) *Bucket {
		for len(tl.Buckets) <= i {
			tl.Buckets = append(tl.Buckets, Bucket{Start: time.Duration(len(tl.Buckets)) * bucket, States: map[string]time.Duration{}})
		}
		return &tl.Buckets[i]
	}
	// spread calls f for each bucket that [a, b) overlaps, with the overlap.
	spread := func(a, b trace.Time, f func(*Bucket, time.Duration)) {
		for a < b {
			i := int(time.Duration(a-e.first) / bucket)
			end := e.first + trace.Time(time.Duration(i+1)*bucket)
			end = min(end, b)
			f(at(i), time.Duration(end-a))
			a = end
		}
	}
	followed, found := trace.GoID(0), false
	state, since := "", trace.Time(0)
	states := map[trace.GoID]trace.GoState{}
	runnable, runnableSince := 0, trace.Time(0)
	err = e.each(func(ev trace.Event, st trace.StateTransition, fs []string) {
		id := st.Resource.Goroutine()
		_, to := st.Goroutine()
		if from := states[id]; from == trace.GoRunnable || to == trace.GoRunnable {
			n := float64(runnable)
			spread(max(runnableSince, e.first), ev.Time(), func(b *Bucket, d time.Duration) { b.Runnable += n * float64(d) })
			runnableSince = ev.Time()
			if from == trace.GoRunnable {
				runnable--
			}
			if to == trace.GoRunnable {
				runnable++
			}
		}
		states[id] = to
		if !found && slices.ContainsFunc(fs, func(f string) bool { return strings.Contains(f, pattern) }) {
			followed, found = id, true
			tl.Goroutine = label(fs)
		}
		if !found || id != followed {
			return
		}
		if state != "" {
			s := state
			spread(since, ev.Time(), func(b *Bucket, d time.Duration) { b.States[s] += d })
		}
		state, since = classify(to, st.Reason, fs), ev.Time()
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("no goroutine's stack contains %q", pattern)
	}
	if state != "" {
		s := state
		spread(since, e.last, func(b *Bucket, d time.Duration) { b.States[s] += d })
	}
	for i := range tl.Buckets {
		tl.Buckets[i].Runnable /= float64(bucket)
	}
	return tl, nil
}

// Print writes the timeline as a table in milliseconds, one row per bucket; the causes of
// blocking without a column of their own follow each row where they took over a millisecond.
func (tl *Timeline) Print(w io.Writer) {
	fmt.Fprintf(w, "goroutine %s, ms per %v\n", tl.Goroutine, tl.Bucket)
	fmt.Fprintf(w, "%7s %6s", "at", "runq")
	for _, c := range columns {
		fmt.Fprintf(w, " %12s", c)
	}
	fmt.Fprintln(w, "  other")
	for _, b := range tl.Buckets {
		fmt.Fprintf(w, "%7.2f %6.1f", b.Start.Seconds(), b.Runnable)
		for _, c := range columns {
			fmt.Fprintf(w, " %12.1f", float64(b.States[c])/float64(time.Millisecond))
		}
		for _, s := range slices.Sorted(maps.Keys(b.States)) {
			if d := b.States[s]; !slices.Contains(columns, s) && d > time.Millisecond {
				fmt.Fprintf(w, "  %s=%.1f", s, float64(d)/float64(time.Millisecond))
			}
		}
		fmt.Fprintln(w)
	}
}

// BlockedTime is the time goroutines of one kind spent blocked at one place.
type BlockedTime struct {
	Goroutine string // the outermost function of ours
	At        string // the innermost function of SQLite (or of anything) under the pattern
	Total     time.Duration
	Waits     int
	Over1ms   int
}

// BlockedReport sums blocked time by goroutine and place, the largest first.
type BlockedReport struct {
	Pattern string
	Span    time.Duration
	Total   time.Duration
	Rows    []BlockedTime
}

// ReadBlocked sums the time every goroutine spent blocked with a stack containing pattern.
func ReadBlocked(r io.Reader, pattern string) (*BlockedReport, error) {
	e, err := newEvents(r)
	if err != nil {
		return nil, err
	}
	type open struct {
		since trace.Time
		key   [2]string
	}
	waiting := map[trace.GoID]open{}
	labels := map[trace.GoID]string{}
	sums := map[[2]string]*BlockedTime{}
	rep := &BlockedReport{Pattern: pattern}
	err = e.each(func(ev trace.Event, st trace.StateTransition, fs []string) {
		id := st.Resource.Goroutine()
		if l := label(fs); l != "" && !strings.Contains(labels[id], ours) {
			labels[id] = l
		}
		_, to := st.Goroutine()
		if to == trace.GoWaiting {
			if i := slices.IndexFunc(fs, func(f string) bool { return strings.Contains(f, pattern) }); i >= 0 {
				at := ""
				for _, f := range fs[i+1:] {
					if !strings.Contains(strings.ToLower(f), "mutex") {
						at = f
						break
					}
				}
				waiting[id] = open{ev.Time(), [2]string{labels[id], at}}
			}
			return
		}
		o, ok := waiting[id]
		if !ok {
			return
		}
		delete(waiting, id)
		d := time.Duration(ev.Time() - o.since)
		s := sums[o.key]
		if s == nil {
			s = &BlockedTime{Goroutine: o.key[0], At: o.key[1]}
			sums[o.key] = s
		}
		s.Total += d
		s.Waits++
		if d > time.Millisecond {
			s.Over1ms++
		}
		rep.Total += d
	})
	if err != nil {
		return nil, err
	}
	rep.Span = time.Duration(e.last - e.first)
	for _, s := range sums {
		rep.Rows = append(rep.Rows, *s)
	}
	sort.Slice(rep.Rows, func(i, j int) bool { return rep.Rows[i].Total > rep.Rows[j].Total })
	return rep, nil
}

// Print writes the report, the largest sums first.
func (b *BlockedReport) Print(w io.Writer) {
	fmt.Fprintf(w, "%.2f s of trace; blocked on %s: %v in all\n", b.Span.Seconds(), b.Pattern, b.Total.Round(time.Millisecond))
	for _, r := range b.Rows {
		fmt.Fprintf(w, "%12v %7d waits %6d over 1 ms  %s | %s\n", r.Total.Round(time.Microsecond), r.Waits, r.Over1ms, r.Goroutine, r.At)
	}
}
