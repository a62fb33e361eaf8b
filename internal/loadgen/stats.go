package loadgen

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// stats collects what a run measures. Safe for concurrent use.
type stats struct {
	mu        sync.Mutex
	sent      int
	accepted  int
	byType    map[string]int
	errors    map[string]int
	post      []time.Duration // every answered POST
	window    []time.Duration // answered POSTs since the last progress line
	resolve   []time.Duration // accept → resolvable, followed operations
	timeouts  int
	following int
	fellBack  map[string]int // picks of a kind sent as creates: no published DID was free

	start    time.Time // of the timed phase: the origin of series and samples
	series   []Point   // one per progress line
	samples  []ResolveSample
	errsSeen int // errors counted into series so far

	gets     []time.Duration // answered resolutions of a resolve mix
	getsSent int             // every resolution sent, answered or not
	getsOK   int
	getsSeen int // resolutions counted into progress lines so far

	// noAnswer counts the requests that got no answer (connection refused, reset or timed
	// out): they have no latency to count, and a run that has them measured a target that
	// was not there the whole time. firstNoAnswer is the first one's reason.
	noAnswer      int
	firstNoAnswer string

	iv        interval // the current --interval
	intervals []Interval
}

// Point is one second of a run, as the progress line shows it.
type Point struct {
	At       time.Duration // since the start of the timed phase
	Accepted int           // in this interval
	Errors   int
	POST     map[int]time.Duration // percentiles of this interval's POSTs (50, 95, 99, 100)
}

// ResolveSample is one measured operation: when it was accepted, and how long until it resolved.
type ResolveSample struct {
	At      time.Duration
	Latency time.Duration
}

func newStats() *stats {
	return &stats{byType: map[string]int{}, errors: map[string]int{}, fellBack: map[string]int{}, start: time.Now()}
}

// fallBack counts a pick of kind that was sent as a create.
func (s *stats) fallBack(kind string) {
	s.mu.Lock()
	s.fellBack[kind]++
	s.mu.Unlock()
}

// errorKindsMax bounds the distinct errors counted by name: a text answer that quotes each
// request would otherwise add one per request. Later ones count as "other".
const errorKindsMax = 32

// posted records one answered POST: its latency and, when it was not accepted, its status and
// error code.
func (s *stats) posted(kind string, lat time.Duration, errCode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	s.post = append(s.post, lat)
	s.window = append(s.window, lat)
	s.iv.observePost(lat, errCode == "")
	if errCode != "" {
		if _, seen := s.errors[errCode]; !seen && len(s.errors) >= errorKindsMax {
			errCode = "other"
		}
		s.errors[errCode]++
		return
	}
	s.accepted++
	s.byType[kind]++
}

// unanswered records a request that got no answer, counted among the errors as "transport"
// (a POST) or "GET:none" (a resolution), with no latency: it measured nothing of the server.
func (s *stats) unanswered(get bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noAnswer++
	if s.firstNoAnswer == "" {
		s.firstNoAnswer = err.Error()
	}
	if get {
		s.getsSent++
		s.errors["GET:none"]++
		s.iv.observeGetUnanswered()
		return
	}
	s.sent++
	s.errors["transport"]++
	s.iv.observePostUnanswered()
}

func (s *stats) followStart() {
	s.mu.Lock()
	s.following++
	s.mu.Unlock()
}

// followDone records the end of a follow that began at start.
func (s *stats) followDone(start time.Time, lat time.Duration, measured, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.following--
	switch {
	case !ok:
		s.timeouts++
	case measured:
		s.resolve = append(s.resolve, lat)
		s.iv.observeResolved(lat)
		s.samples = append(s.samples, ResolveSample{At: start.Sub(s.start), Latency: lat})
	}
}

// got records one answered resolution of a resolve mix: its latency and whether it answered
// 200. Any other answer is counted among the errors as GET:<status>.
func (s *stats) got(lat time.Duration, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets = append(s.gets, lat)
	s.getsSent++
	ok := status == 200
	if ok {
		s.getsOK++
	} else {
		s.errors[fmt.Sprintf("GET:%d", status)]++
	}
	s.iv.observeGet(lat, ok)
}

// cutInterval ends the current --interval at elapsed, keeps it for the summary and returns it.
func (s *stats) cutInterval(elapsed time.Duration, u *Usage) Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.iv.cut(elapsed)
	i.Usage = u
	s.intervals = append(s.intervals, i)
	return i
}

// intervalPending reports whether the current --interval has observed anything and has lasted
// at least minimum since its start.
func (s *stats) intervalPending(elapsed, minimum time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.iv.empty() && elapsed-s.iv.from >= minimum
}

// progress writes one line about the last window.
func (s *stats) progress(w io.Writer, elapsed time.Duration, lastAccepted *int) {
	s.mu.Lock()
	win := s.window
	s.window = nil
	accepted, sent, errs, following := s.accepted, s.sent, 0, s.following
	for _, n := range s.errors {
		errs += n
	}
	p := percentiles(win)
	s.series = append(s.series, Point{At: elapsed, Accepted: accepted - *lastAccepted, Errors: errs - s.errsSeen, POST: p})
	s.errsSeen = errs
	gets := s.getsSent - s.getsSeen
	s.getsSeen = s.getsSent
	s.mu.Unlock()
	getsPart := ""
	if gets > 0 {
		getsPart = fmt.Sprintf("  GET %6d/s", gets)
	}
	fmt.Fprintf(w, "%6.1fs  sent %7d  accepted %7d (%6d/s)  errors %5d  POST p50 %7s p99 %7s  following %d%s\n",
		elapsed.Seconds(), sent, accepted, accepted-*lastAccepted, errs, fmtDur(p[50]), fmtDur(p[99]), following, getsPart)
	*lastAccepted = accepted
}

// Summary is the result of a run.
type Summary struct {
	Elapsed        time.Duration
	Sent           int
	Accepted       int
	AcceptedByType map[string]int
	AcceptedPerSec float64
	Errors         map[string]int
	POST           map[int]time.Duration // percentile → latency (50, 95, 99, 100) of the answered POSTs
	Resolve        map[int]time.Duration // accept → resolvable (50, 95, 100)
	Followed       int
	FollowTimeouts int
	// WarmupAccepted counts the creates of a mixed run's warm-up; they are listed in
	// --accepted-out (they are accepted operations) but not in the figures above.
	WarmupAccepted int
	// FellBack counts, per kind, the picks of the mix sent as creates because no published DID
	// was free: a mix that asks for more changes than DIDs become published falls back.
	FellBack map[string]int
	// Series has one point per second of the timed phase; Samples the measured operations.
	Series  []Point
	Samples []ResolveSample
	// GETs counts the resolutions of a resolve mix, GETsOK those answered 200, GET the
	// latency percentiles of those answered.
	GETs      int
	GETsOK    int
	GETPerSec float64
	GET       map[int]time.Duration
	// Intervals has one entry per --interval line.
	Intervals []Interval
	// Usage is the machine's, the servers' and the generator's CPU over the timed phase.
	Usage Usage
	// NoAnswer counts the requests (POSTs and GETs) that got no answer, FirstNoAnswer the
	// first one's reason.
	NoAnswer      int
	FirstNoAnswer string
}

func (s *stats) summary(elapsed time.Duration) Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Summary{
		Elapsed: elapsed, Sent: s.sent, Accepted: s.accepted, AcceptedByType: map[string]int{}, Errors: map[string]int{},
		POST: percentiles(s.post), Resolve: percentiles(s.resolve), Followed: len(s.resolve), FollowTimeouts: s.timeouts,
		FellBack: map[string]int{}, Series: slices.Clone(s.series), Samples: slices.Clone(s.samples),
		GETs: s.getsSent, GETsOK: s.getsOK, GET: percentiles(s.gets), Intervals: slices.Clone(s.intervals),
		NoAnswer: s.noAnswer, FirstNoAnswer: s.firstNoAnswer,
	}
	for k, v := range s.fellBack {
		out.FellBack[k] = v
	}
	for k, v := range s.byType {
		out.AcceptedByType[k] = v
	}
	for k, v := range s.errors {
		out.Errors[k] = v
	}
	if elapsed > 0 {
		out.AcceptedPerSec = float64(s.accepted) / elapsed.Seconds()
		out.GETPerSec = float64(s.getsSent) / elapsed.Seconds()
	}
	return out
}

// Write prints the summary.
func (s Summary) Write(w io.Writer) {
	// A resolve-only run posted nothing: its summary is its resolutions.
	posted := s.Sent > 0 || s.GETs == 0
	if posted {
		fmt.Fprintf(w, "\nsummary: %d sent, %d accepted in %s: %.0f accepted/s\n", s.Sent, s.Accepted, s.Elapsed.Round(time.Millisecond), s.AcceptedPerSec)
		fmt.Fprintf(w, "  accepted by type: %s\n", formatCounts(s.AcceptedByType))
		fmt.Fprintf(w, "  POST latency:     p50 %s  p95 %s  p99 %s  max %s\n", fmtDur(s.POST[50]), fmtDur(s.POST[95]), fmtDur(s.POST[99]), fmtDur(s.POST[100]))
		fmt.Fprintf(w, "  accept→resolvable: p50 %s  p95 %s  max %s  (%d followed, %d timed out)\n",
			fmtDur(s.Resolve[50]), fmtDur(s.Resolve[95]), fmtDur(s.Resolve[100]), s.Followed, s.FollowTimeouts)
	} else {
		fmt.Fprintf(w, "\nsummary: %d GETs in %s: %.0f GET/s\n", s.GETs, s.Elapsed.Round(time.Millisecond), s.GETPerSec)
	}
	if s.GETs > 0 {
		fmt.Fprintf(w, "  resolutions:      %d GETs in %s: %.0f GET/s, %d answered 200; latency p50 %s  p95 %s  p99 %s  max %s\n",
			s.GETs, s.Elapsed.Round(time.Millisecond), s.GETPerSec, s.GETsOK, fmtDur(s.GET[50]), fmtDur(s.GET[95]), fmtDur(s.GET[99]), fmtDur(s.GET[100]))
	}
	fmt.Fprintf(w, "  errors by code:   %s\n", formatCounts(s.Errors))
	if s.NoAnswer > 0 {
		fmt.Fprintf(w, "  no answer:        %d requests, not in the latencies; the first: %s\n", s.NoAnswer, s.FirstNoAnswer)
	}
	if s.Usage.Cores > 0 {
		fmt.Fprintf(w, "  cpu:              %s\n", s.Usage)
	}
	if len(s.FellBack) > 0 {
		n := 0
		for _, v := range s.FellBack {
			n += v
		}
		fmt.Fprintf(w, "  mix fell back:    %d picks sent as creates, no published DID was free (%s); more --warmup-dids or a longer run helps\n", n, formatCounts(s.FellBack))
	}
}

func formatCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, " ")
}

// percentiles returns p50, p95, p99 and the maximum (100) of ds (nearest rank).
func percentiles(ds []time.Duration) map[int]time.Duration {
	out := map[int]time.Duration{}
	if len(ds) == 0 {
		return out
	}
	sorted := append([]time.Duration(nil), ds...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for _, p := range []int{50, 95, 99, 100} {
		rank := (p*len(sorted) + 99) / 100
		out[p] = sorted[max(rank-1, 0)]
	}
	return out
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
