package loadgen

import (
	"fmt"
	"time"
)

// interval accumulates what one --interval of the timed phase measured, so that a long run shows
// drift that its whole-run summary would average away. stats holds it under its mutex.
type interval struct {
	from     time.Duration // start of the interval, since the start of the timed phase
	accepted int
	errors   int
	post     []time.Duration
	resolve  []time.Duration // accept→resolvable of the measured operations that resolved in it
	gets     []time.Duration // answered resolutions sent by a resolve mix
	getsSent int
	getsOK   int
}

// Interval is one --interval line of a run.
type Interval struct {
	From, To time.Duration // since the start of the timed phase
	Accepted int
	Errors   int
	POST     map[int]time.Duration // percentiles of the interval's POSTs (50, 95, 99, 100)
	// Resolve holds the percentiles of accept→resolvable of the measured operations that
	// resolved in this interval, whenever they were accepted: a backlog building up shows as
	// this rising, not as a gap.
	Resolve  map[int]time.Duration
	Resolved int
	GETs     int
	GETsOK   int
	GET      map[int]time.Duration
	// Usage is the machine's, the servers' and the generator's CPU over the interval (nil: not
	// sampled).
	Usage *Usage
}

func (iv *interval) observePost(lat time.Duration, accepted bool) {
	iv.post = append(iv.post, lat)
	if accepted {
		iv.accepted++
	} else {
		iv.errors++
	}
}

// observePostUnanswered counts a POST that got no answer: an error, with no latency.
func (iv *interval) observePostUnanswered() { iv.errors++ }

func (iv *interval) observeResolved(lat time.Duration) { iv.resolve = append(iv.resolve, lat) }

func (iv *interval) observeGet(lat time.Duration, ok bool) {
	iv.gets = append(iv.gets, lat)
	iv.getsSent++
	if ok {
		iv.getsOK++
	}
}

// observeGetUnanswered counts a resolution that got no answer, with no latency.
func (iv *interval) observeGetUnanswered() { iv.getsSent++ }

// cut ends the interval at to and starts the next one there.
func (iv *interval) cut(to time.Duration) Interval {
	out := Interval{
		From: iv.from, To: to, Accepted: iv.accepted, Errors: iv.errors, POST: percentiles(iv.post),
		Resolve: percentiles(iv.resolve), Resolved: len(iv.resolve),
		GETs: iv.getsSent, GETsOK: iv.getsOK, GET: percentiles(iv.gets),
	}
	*iv = interval{from: to}
	return out
}

// empty reports whether nothing was observed since the last cut.
func (iv *interval) empty() bool {
	return len(iv.post) == 0 && iv.errors == 0 && len(iv.resolve) == 0 && iv.getsSent == 0
}

// perSec rates n over the interval's length.
func (i Interval) perSec(n int) float64 {
	if d := (i.To - i.From).Seconds(); d > 0 {
		return float64(n) / d
	}
	return 0
}

// AcceptedPerSec is the interval's accepted operations per second.
func (i Interval) AcceptedPerSec() float64 { return i.perSec(i.Accepted) }

// Line is the interval as `anchord loadgen --interval` prints it. It starts with "interval" so
// that a script can pick it out of the output and append what it samples at the same moment.
func (i Interval) Line() string {
	s := fmt.Sprintf("interval %7s-%-7s accepted %6.0f/s  errors %5d  POST p50 %7s p99 %7s  accept→resolvable p95 %7s (%d resolved)",
		fmtClock(i.From), fmtClock(i.To), i.AcceptedPerSec(), i.Errors, fmtDur(i.POST[50]), fmtDur(i.POST[99]), fmtDur(i.Resolve[95]), i.Resolved)
	if i.GETs > 0 {
		s += fmt.Sprintf("  GET %6.0f/s (%d not 200) p50 %s p99 %s", i.perSec(i.GETs), i.GETs-i.GETsOK, fmtDur(i.GET[50]), fmtDur(i.GET[99]))
	}
	if i.Usage != nil {
		s += "  " + i.Usage.String()
	}
	return s
}

// fmtClock writes an offset into the run as m:ss (or h:mm:ss), to the second.
func fmtClock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
