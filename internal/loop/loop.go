// Package loop holds the small helpers every background loop uses: Sleep that honours a context,
// Every with an immediate first tick and jitter, and Backoff for retrying failed iterations.
// Loops themselves live in their domain packages as a struct with Run(ctx) and runOnce.
package loop

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Sleep waits for d or until ctx is done. It reports whether the full duration elapsed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Jitter returns d scaled by a random factor in [1-frac, 1+frac].
func Jitter(d time.Duration, frac float64) time.Duration {
	if d <= 0 || frac <= 0 {
		return d
	}
	f := 1 - frac + 2*frac*rand.Float64()
	return time.Duration(float64(d) * f)
}

// Every calls fn at once and then every interval (with 10 % jitter so that instances started
// together drift apart) until ctx is done. fn's own duration does not shift the schedule of the
// next call beyond making it late: calls never overlap.
func Every(ctx context.Context, interval time.Duration, fn func(ctx context.Context)) {
	for {
		if ctx.Err() != nil {
			return
		}
		fn(ctx)
		if !Sleep(ctx, Jitter(interval, 0.1)) {
			return
		}
	}
}

// Backoff returns the wait before retry number attempt (1-based): initial × multiplier^(attempt−1),
// capped at max. It is the redelivery schedule, shared by every retrier.
func Backoff(attempt int, initial time.Duration, multiplier float64, max time.Duration) time.Duration {
	if attempt <= 1 {
		return min(initial, max)
	}
	if multiplier < 1 {
		multiplier = 1
	}
	d := float64(initial) * math.Pow(multiplier, float64(attempt-1))
	if d >= float64(max) || math.IsInf(d, 0) || math.IsNaN(d) {
		return max
	}
	return time.Duration(d)
}
