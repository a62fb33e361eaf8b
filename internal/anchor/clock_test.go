package anchor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestNextAnchorTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		name      string
		clock     store.AnchorClock
		now       time.Time
		at        time.Time
		notBefore time.Time
	}{
		{"the first anchor: now", store.AnchorClock{}, at(300), at(300), time.Time{}},
		{"the same second: not before the next", store.AnchorClock{Last: at(300), WrittenAt: at(300)}, at(900), time.Time{}, at(1000)},
		{"the next second: now", store.AnchorClock{Last: at(300), WrittenAt: at(300)}, at(1000), at(1000), time.Time{}},
		{"later: now", store.AnchorClock{Last: at(300), WrittenAt: at(300)}, at(7300), at(7300), time.Time{}},
		{"the clock stepped back behind the latest write: at once, in the next second of the latest",
			store.AnchorClock{Last: at(3_600_300), WrittenAt: at(3_600_300)}, at(0), at(3_601_000), time.Time{}},
		{"ahead of the clock after a step: not before a second after the latest write",
			store.AnchorClock{Last: at(3_601_000), WrittenAt: at(0)}, at(400), time.Time{}, at(1000)},
		{"ahead of the clock after a step: a second after the latest write, the next second of the latest",
			store.AnchorClock{Last: at(3_601_000), WrittenAt: at(0)}, at(1100), at(3_602_000), time.Time{}},
		{"caught up with the clock", store.AnchorClock{Last: at(3_601_000), WrittenAt: at(0)}, at(3_601_500), time.Time{}, at(3_602_000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, notBefore := next(tc.clock, tc.now)
			require.Equal(t, tc.at, got)
			require.Equal(t, tc.notBefore, notBefore)
		})
	}
}

// recordTime reads the time of anchor a's record.
func recordTime(t *testing.T, a store.Anchor) time.Time {
	t.Helper()
	var rec Record
	require.NoError(t, json.Unmarshal(a.Record, &rec))
	return rec.Time
}

// writeOne records an anchor of a batch creating one DID.
func writeOne(t *testing.T, st store.Store, w *Writer, n int) (store.Anchor, error) {
	t.Helper()
	var a store.Anchor
	err := st.InTx(context.Background(), func(ctx context.Context, tx store.Executor) error {
		var err error
		a, err = w.Write(ctx, tx, Request{AnchorString: fmt.Sprintf("1.Qm%d", n), CoreIndexCID: fmt.Sprintf("Qm%d", n), OpCount: 1,
			Ops: []OpRef{{fmt.Sprintf("Ei%d", n), "create"}}})
		return err
	})
	return a, err
}

func TestWholeSecondsSpaceAnchorsASecondApart(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		key, err := LoadOrCreateDomainKey(ctx, st)
		require.NoError(t, err)
		w, err := NewWriter(Config{WholeSeconds: true, Logger: anchordtest.Logger(t)}, NewLocal(key))
		require.NoError(t, err)

		wait, err := w.Wait(ctx, st)
		require.NoError(t, err)
		require.Zero(t, wait, "no anchor yet: nothing to wait for")

		var times []time.Time
		for i := range 3 {
			a, err := writeOne(t, st, w, i)
			for errors.Is(err, ErrTooEarly) {
				// Written back to back, an anchor is refused until the next second, which
				// Wait says how long to wait for: at most a second, and nothing once that
				// second has come (on a busy machine it can come between the two calls).
				wait, werr := w.Wait(ctx, st)
				require.NoError(t, werr)
				require.LessOrEqual(t, wait, time.Second)
				time.Sleep(wait)
				a, err = writeOne(t, st, w, i)
				require.NoError(t, err, "written once Wait's time has passed")
			}
			require.NoError(t, err)
			require.NoError(t, VerifyLocal(a))
			times = append(times, recordTime(t, a))
			require.Equal(t, times[i].Unix(), a.IssuedAt, "the anchor keeps its credential's second")
		}
		for i := 1; i < len(times); i++ {
			require.Greater(t, times[i].Truncate(time.Second), times[i-1].Truncate(time.Second), "anchor %d", i)
		}
		c, err := st.AnchorClockGet(ctx)
		require.NoError(t, err)
		require.True(t, times[2].Equal(c.Last), "the clock holds the latest anchor's time")
		anchors, err := st.AnchorList(ctx, store.AnchorListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, anchors, 3, "a refused anchor wrote nothing")
	})
}

func TestWholeSecondsOffKeepsTheRecordTime(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	key, err := LoadOrCreateDomainKey(ctx, st)
	require.NoError(t, err)
	fixed := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w, err := NewWriter(Config{NowFunc: func() time.Time { return fixed }}, NewLocal(key))
	require.NoError(t, err)
	for i := range 2 {
		a, err := writeOne(t, st, w, i)
		require.NoError(t, err)
		require.Equal(t, fixed, recordTime(t, a), "the sidetree and ion profiles: two anchors may share a second")
	}
	wait, err := w.Wait(ctx, st)
	require.NoError(t, err)
	require.Zero(t, wait)
	c, err := st.AnchorClockGet(ctx)
	require.NoError(t, err)
	require.Zero(t, c, "the anchor clock is not used")
}

func TestWholeSecondsAfterTheClockSteppedBack(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	key, err := LoadOrCreateDomainKey(ctx, st)
	require.NoError(t, err)
	logs := &anchordtest.SyncBuffer{}
	w, err := NewWriter(Config{WholeSeconds: true, Logger: slog.New(slog.NewTextHandler(logs, nil))}, NewLocal(key))
	require.NoError(t, err)

	// The latest anchor was written an hour ahead of the clock as it is now (the clock stepped
	// back): the next anchor goes at once, in the second after it, and the step is reported.
	now, err := st.Now(ctx)
	require.NoError(t, err)
	ahead := now.Add(time.Hour)
	require.NoError(t, st.AnchorClockSet(ctx, store.AnchorClock{Last: ahead, WrittenAt: ahead}))
	wait, err := w.Wait(ctx, st)
	require.NoError(t, err)
	require.Zero(t, wait)
	a, err := writeOne(t, st, w, 0)
	require.NoError(t, err)
	require.Equal(t, ahead.Truncate(time.Second).Add(time.Second), recordTime(t, a))

	// The next ones, a second of the clock apart, each in the second after the previous. Whether
	// the write right after is refused depends on the clock: a busy machine may take that second
	// between the two writes, and then it goes.
	c, err := st.AnchorClockGet(ctx)
	require.NoError(t, err)
	second, err := writeOne(t, st, w, 1)
	after, nerr := st.Now(ctx)
	require.NoError(t, nerr)
	if after.Before(c.WrittenAt.Add(time.Second)) {
		require.ErrorIs(t, err, ErrTooEarly, "a second after the previous write, not before")
	} else if !errors.Is(err, ErrTooEarly) {
		require.NoError(t, err)
		t.Logf("a second of the clock passed between two writes (%s): the second went", after.Sub(c.WrittenAt))
		require.Equal(t, recordTime(t, a).Add(time.Second), recordTime(t, second))
		a = second
	}
	prev := recordTime(t, a)
	for i := range 2 {
		wait, err := w.Wait(ctx, st)
		require.NoError(t, err)
		require.LessOrEqual(t, wait, time.Second)
		time.Sleep(wait)
		a, err := writeOne(t, st, w, i+2)
		require.NoError(t, err)
		require.Equal(t, prev.Truncate(time.Second).Add(time.Second), recordTime(t, a))
		prev = recordTime(t, a)
	}
	require.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
	require.Contains(t, logs.String(), "stepped back")
}
