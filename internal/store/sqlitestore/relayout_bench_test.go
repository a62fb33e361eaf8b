package sqlitestore

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// BenchmarkRelayout moves an older database of 200,000 DIDs (half of the states without
// positions, ~300-byte states) with the default pages and no rest between steps, and reports
// each phase's time and its median and longest step, the time a step held the write lock. The
// phase's last step is the drop of the suffix index, the swap of the tables and the drop of the
// old one.
// Run with -benchtime 1x.
func BenchmarkRelayout(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		dir, _ := oldLayout(b, 200_000, 300)
		// As the daemon opens it: the WAL copied by the Checkpointer, not by the commit that
		// takes it past its limit (which would be a step's).
		s, err := Open(ctx, Config{DataDir: dir, CheckpointInterval: CheckpointIntervalDefault})
		require.NoError(b, err)
		cctx, stop := context.WithCancel(ctx)
		ckpt := make(chan error)
		go func() { ckpt <- s.Checkpointer().Run(cctx) }()
		r, err := NewRelayout(s, nil, nil)
		require.NoError(b, err)
		r.restRatio = 0
		b.StartTimer()
		type phaseFigures struct {
			took, longest, last time.Duration
			held                []time.Duration
		}
		figures := map[relayoutPhase]*phaseFigures{}
		var switched time.Duration
		for {
			start := time.Now()
			phase, err := r.phaseOf(ctx)
			require.NoError(b, err)
			var held time.Duration
			if phase == relayoutPositions {
				// The positions phase by its parts, to tell the switch (the drop of the suffix
				// index) from the last page of the fill.
				var end bool
				_, end, held, err = r.fillPositions(ctx)
				if err == nil && end {
					switched, err = r.switchReads(ctx)
				}
			} else {
				phase, held, err = r.runOnce(ctx)
			}
			require.NoError(b, err)
			if phase == relayoutDone {
				break
			}
			f := figures[phase]
			if f == nil {
				f = &phaseFigures{}
				figures[phase] = f
			}
			f.took += time.Since(start)
			f.longest = max(f.longest, held)
			f.last = held
			f.held = append(f.held, held)
		}
		b.StopTimer()
		for _, p := range []relayoutPhase{relayoutPositions, relayoutCopy, relayoutDelete} {
			f := figures[p]
			b.ReportMetric(f.took.Seconds(), p.String()+"-s")
			slices.Sort(f.held)
			b.ReportMetric(float64(f.held[len(f.held)/2].Microseconds())/1000, p.String()+"-median-ms")
			b.ReportMetric(float64(f.longest.Microseconds())/1000, p.String()+"-longest-ms")
			b.ReportMetric(float64(f.last.Microseconds())/1000, p.String()+"-last-ms")
		}
		b.ReportMetric(float64(switched.Microseconds())/1000, "switch-ms")
		b.ReportMetric(200_000/(figures[relayoutPositions].took+figures[relayoutCopy].took+figures[relayoutDelete].took).Seconds(), "states/s")
		stop()
		require.NoError(b, <-ckpt)
		s.Close()
	}
}

// BenchmarkStateWritesAroundTheRelayout measures what the observer's state writes cost on an
// older database of 200,000 DIDs before the move, halfway through its copy (the triggers write
// each state twice) and after it: the write transaction of 10,000 new states (~300 bytes) and
// 10,000 replaced ones, three rounds each, the median reported. Run with -benchtime 1x.
func BenchmarkStateWritesAroundTheRelayout(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		dir, suffixes := oldLayout(b, 200_000, 300)
		s := openDir(b, dir)
		r, err := NewRelayout(s, nil, nil)
		require.NoError(b, err)
		r.restRatio = 0
		round := 0
		measure := func(name string) {
			var took []time.Duration
			for range 3 {
				round++
				fresh := make([]store.DIDState, 0, 10_000)
				replaced := make([]store.DIDState, 0, 10_000)
				for k := range 10_000 {
					state := make([]byte, 300)
					copy(state, fmt.Sprint(round, k))
					fresh = append(fresh, store.DIDState{Suffix: oldSuffix(1_000_000*round + k), State: state,
						Positions: []store.DIDPosition{{AnchorSeq: int64(500_000 + round), Index: k}}})
					replaced = append(replaced, store.DIDState{Suffix: suffixes[(round*10_000+k*7)%len(suffixes)], State: state,
						Positions: []store.DIDPosition{{AnchorSeq: 1}}})
				}
				start := time.Now()
				require.NoError(b, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
					if _, err := tx.DIDStateInsertMany(ctx, fresh); err != nil {
						return err
					}
					return tx.DIDStatePutMany(ctx, replaced)
				}))
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[1].Microseconds())/1000, name+"-ms")
		}
		measure("before")
		for r.phase != relayoutCopy || r.rows < int64(len(suffixes)/2) {
			_, _, err := r.runOnce(ctx)
			require.NoError(b, err)
		}
		measure("copying")
		relayoutToEnd(b, r)
		measure("after")
		s.Close()
	}
}
