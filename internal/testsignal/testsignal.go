// Package testsignal provides signals that components emit at interesting points (a batch cut,
// an anchor observed) so tests can wait for them instead of sleeping. In production a Signal is
// never initialised and Signal costs one nil check.
package testsignal

import (
	"testing"
	"time"
)

// Signal is a buffered channel of events of type T. The zero value is disabled.
type Signal[T any] struct {
	ch chan T
}

// Init enables the signal for a test. Call it before the component starts.
func (s *Signal[T]) Init(tb testing.TB) {
	tb.Helper()
	s.ch = make(chan T, 1000)
}

// Signal records v if the signal was initialised. It never blocks: when the test does not read
// fast enough the value is dropped, which a test waiting for it then reports as a timeout.
func (s *Signal[T]) Signal(v T) {
	if s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
	}
}

// WaitOrTimeout returns the next value or fails the test after timeout.
func (s *Signal[T]) WaitOrTimeout(tb testing.TB, timeout time.Duration) T {
	tb.Helper()
	if s.ch == nil {
		tb.Fatal("testsignal: WaitOrTimeout on a signal that was never Init'ed")
	}
	select {
	case v := <-s.ch:
		return v
	case <-time.After(timeout):
		tb.Fatalf("testsignal: no signal within %s", timeout)
	}
	var zero T
	return zero
}
