package main

import (
	"bytes"
	"runtime/trace"
	"strings"
	"sync"
	"testing"
	"time"
)

// traced runs f under the execution tracer and returns the trace.
func traced(t *testing.T, f func()) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatal(err)
	}
	f()
	trace.Stop()
	return buf.Bytes()
}

// followedWaiter waits 60 ms on a channel, then 40 ms on a mutex held elsewhere, then spins.
func followedWaiter(ch <-chan struct{}, mu *sync.Mutex, done chan<- struct{}) {
	<-ch
	mu.Lock()
	mu.Unlock()
	end := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(end) {
	}
	close(done)
}

// A goroutine's waits are told apart by what it waited in, and each lasts at least as long as
// the test made it wait (a loaded machine only makes them longer, and splits its spin between
// running and waiting for a core).
func TestTimelineSplitsAGoroutinesTimeByCause(t *testing.T) {
	raw := traced(t, func() {
		ch := make(chan struct{})
		var mu sync.Mutex
		done := make(chan struct{})
		go followedWaiter(ch, &mu, done)
		time.Sleep(60 * time.Millisecond)
		mu.Lock()
		close(ch)
		time.Sleep(40 * time.Millisecond)
		mu.Unlock()
		<-done
	})
	tl, err := ReadTimeline(bytes.NewReader(raw), "followedWaiter", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(tl.Goroutine, "tracestates.followedWaiter") {
		t.Fatalf("followed %q", tl.Goroutine)
	}
	sum := map[string]time.Duration{}
	for _, b := range tl.Buckets {
		for s, d := range b.States {
			sum[s] += d
		}
		if b.Runnable < 0 {
			t.Fatalf("bucket at %v: %.1f runnable goroutines", b.Start, b.Runnable)
		}
	}
	if d := sum["wait:tracestates.followedWaiter"]; d < 55*time.Millisecond {
		t.Errorf("waited %v on the channel, want at least ~60 ms (all: %v)", d, sum)
	}
	// sync.Mutex waits are the runtime's "sync" blocking, named by our innermost function.
	var mutexWait time.Duration
	for s, d := range sum {
		if strings.HasPrefix(s, "wait:") && s != "wait:tracestates.followedWaiter" {
			mutexWait += d
		}
	}
	if mutexWait+sum["wait:tracestates.followedWaiter"] < 95*time.Millisecond {
		t.Errorf("blocked %v in all, want at least ~100 ms (all: %v)", mutexWait+sum["wait:tracestates.followedWaiter"], sum)
	}
	// The spin lasts 20 ms of the wall clock, not of the CPU: on a loaded machine part of it is
	// spent preempted, waiting for a core. It is never blocked, so running and runnable hold it
	// all between them.
	if sum[stateRunning] <= 0 || sum[stateRunning]+sum[stateRunnable] < 19*time.Millisecond {
		t.Errorf("ran %v and was runnable %v, want at least ~20 ms together (all: %v)", sum[stateRunning], sum[stateRunnable], sum)
	}
	var out bytes.Buffer
	tl.Print(&out)
	if !strings.Contains(out.String(), "goroutine github.com/anchord/anchord/tools/tracestates.followedWaiter") {
		t.Errorf("printed:\n%s", out.String())
	}
}

func TestBlockedSumsWaitsByGoroutineAndPlace(t *testing.T) {
	raw := traced(t, func() {
		var mu sync.Mutex
		mu.Lock()
		done := make(chan struct{})
		go lockingWaiter(&mu, done)
		time.Sleep(30 * time.Millisecond)
		mu.Unlock()
		<-done
	})
	rep, err := ReadBlocked(bytes.NewReader(raw), "sync.(*Mutex).Lock")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range rep.Rows {
		if strings.HasSuffix(r.Goroutine, "tracestates.lockingWaiter") {
			found = true
			if r.Total < 25*time.Millisecond || r.Waits < 1 || r.Over1ms < 1 {
				t.Errorf("lockingWaiter: %+v, want one wait of at least ~30 ms", r)
			}
			if !strings.HasSuffix(r.At, "tracestates.lockingWaiter") {
				t.Errorf("blocked at %q, want the function that locked", r.At)
			}
		}
	}
	if !found {
		t.Fatalf("no row for lockingWaiter: %+v", rep.Rows)
	}
}

func lockingWaiter(mu *sync.Mutex, done chan<- struct{}) {
	mu.Lock()
	mu.Unlock()
	close(done)
}

func TestTimelineNamesAPatternNoGoroutineMatches(t *testing.T) {
	raw := traced(t, func() { time.Sleep(time.Millisecond) })
	if _, err := ReadTimeline(bytes.NewReader(raw), "no such function", time.Millisecond); err == nil || !strings.Contains(err.Error(), "no such function") {
		t.Fatalf("err = %v", err)
	}
}
