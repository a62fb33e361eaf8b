package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func at(t time.Time) *time.Time { return &t }

type permitClient struct {
	t    *testing.T
	s    store.Executor
	task string
}

func (c permitClient) acquire(holder string, term int64, stale time.Duration, now *time.Time) (store.TaskPermit, bool) {
	c.t.Helper()
	p, ok, err := c.s.TaskPermitAcquire(context.Background(), store.TaskPermitAcquireParams{
		TaskID: c.task, Holder: holder, Term: term, StaleAfter: stale, Now: now,
	})
	require.NoError(c.t, err)
	return p, ok
}

func (c permitClient) start(holder string, term int64, interval time.Duration, now *time.Time) (store.TaskPermit, bool, error) {
	c.t.Helper()
	return c.s.TaskPermitStart(context.Background(), store.TaskPermitStartParams{
		TaskID: c.task, Holder: holder, Term: term, Interval: interval, Now: now,
	})
}

func (c permitClient) fence(holder string, term int64, now *time.Time) store.TaskPermitFence {
	return store.TaskPermitFence{TaskID: c.task, Holder: holder, Term: term, Now: now}
}

func (c permitClient) get() store.TaskPermit {
	c.t.Helper()
	p, err := c.s.TaskPermitGet(context.Background(), c.task)
	require.NoError(c.t, err)
	return p
}

func exerciseTask(t *testing.T, setup setupFunc) {
	t.Run("TaskPermitAcquireAndRenew", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c := permitClient{t: t, s: s, task: "task-a"}
		_, err := s.TaskPermitGet(ctx, "task-a")
		require.ErrorIs(t, err, store.ErrNotFound)

		before, err := s.Now(ctx)
		require.NoError(t, err)
		p, ok := c.acquire("a", 0, time.Hour, nil)
		require.True(t, ok, "no row: the first asker gets it")
		require.Equal(t, store.TaskPermit{TaskID: "task-a", Holder: "a", Term: 1, Status: store.TaskStatusIdle, UpdatedAt: p.UpdatedAt}, p)
		require.WithinDuration(t, before, p.UpdatedAt, 5*time.Second, "updated_at from the database clock")
		require.Equal(t, p, c.get())

		// Renewal by the holder under its term: same term, updated_at moves on.
		r, ok := c.acquire("a", 1, time.Hour, nil)
		require.True(t, ok)
		require.Equal(t, int64(1), r.Term)
		require.False(t, r.UpdatedAt.Before(p.UpdatedAt))

		// Another instance does not get a fresh permit.
		_, ok = c.acquire("b", 0, time.Hour, nil)
		require.False(t, ok)
		require.Equal(t, "a", c.get().Holder)
	})

	t.Run("TaskPermitConcurrentAcquireHasOneWinner", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		for round := range 5 {
			task := fmt.Sprintf("race-%d", round)
			const n = 12
			var wg sync.WaitGroup
			won := make(chan string, n)
			errs := make(chan error, n)
			start := make(chan struct{})
			for i := range n {
				holder := fmt.Sprintf("instance-%d", i)
				wg.Go(func() {
					<-start
					_, ok, err := s.TaskPermitAcquire(context.Background(), store.TaskPermitAcquireParams{
						TaskID: task, Holder: holder, StaleAfter: time.Minute,
					})
					if err != nil {
						errs <- err
					}
					if ok {
						won <- holder
					}
				})
			}
			close(start)
			wg.Wait()
			close(won)
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			var winners []string
			for w := range won {
				winners = append(winners, w)
			}
			require.Len(t, winners, 1, "round %d", round)
			p := permitClient{t: t, s: s, task: task}.get()
			require.Equal(t, winners[0], p.Holder)
			require.Equal(t, int64(1), p.Term)
		}
	})

	t.Run("TaskPermitTakeoverOnlyAfterThreshold", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		c := permitClient{t: t, s: s, task: "task-t"}
		t0 := time.Now().UTC().Truncate(time.Microsecond)
		const stale = 20 * time.Second
		_, ok := c.acquire("a", 0, stale, at(t0))
		require.True(t, ok)
		_, ok = c.acquire("b", 0, stale, at(t0.Add(stale)))
		require.False(t, ok, "exactly at the threshold the permit is not stale yet")
		p, ok := c.acquire("b", 0, stale, at(t0.Add(stale+time.Microsecond)))
		require.True(t, ok)
		require.Equal(t, "b", p.Holder)
		require.Equal(t, "a", p.PreviousHolder)
		require.Equal(t, int64(2), p.Term)
	})

	t.Run("TaskPermitTakeoverUsesDatabaseClock", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c := permitClient{t: t, s: s, task: "task-clock"}
		// a's last write was 10 s ago by the database clock; the takers pass no clock at all.
		dbNow, err := s.Now(ctx)
		require.NoError(t, err)
		_, ok := c.acquire("a", 0, time.Minute, at(dbNow.Add(-10*time.Second)))
		require.True(t, ok)
		_, ok = c.acquire("b", 0, time.Minute, nil)
		require.False(t, ok, "10 s old is fresh for a 1 min threshold")
		_, ok = c.acquire("b", 0, 5*time.Second, nil)
		require.True(t, ok, "10 s old is stale for a 5 s threshold")
		// A permit refreshed just now is fresh for the same threshold.
		_, ok = c.acquire("c", 0, 5*time.Second, nil)
		require.False(t, ok)
	})

	t.Run("TaskPermitTermIncreasesOnHolderChangeOnly", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		c := permitClient{t: t, s: s, task: "task-term"}
		t0 := time.Now().UTC().Truncate(time.Microsecond)
		step := func(holder string, term int64, now time.Time) store.TaskPermit {
			t.Helper()
			p, ok := c.acquire(holder, term, time.Minute, at(now))
			require.True(t, ok)
			return p
		}
		require.Equal(t, int64(1), step("a", 0, t0).Term)
		require.Equal(t, int64(1), step("a", 1, t0.Add(time.Second)).Term, "renewal")
		require.Equal(t, int64(2), step("b", 0, t0.Add(2*time.Minute)).Term, "takeover")
		require.Equal(t, int64(2), step("b", 2, t0.Add(3*time.Minute)).Term, "renewal")
		require.Equal(t, int64(3), step("a", 1, t0.Add(5*time.Minute)).Term, "a's old term does not renew")

		// a starts a run, then restarts (a new incarnation knows no term): it gets a new term at
		// once, and the status of the dead incarnation's run is reset.
		_, started, err := c.start("a", 3, 0, at(t0.Add(5*time.Minute)))
		require.NoError(t, err)
		require.True(t, started)
		p := step("a", 0, t0.Add(5*time.Minute+time.Second))
		require.Equal(t, int64(4), p.Term)
		require.Equal(t, store.TaskStatusIdle, p.Status)
		require.Equal(t, "a", p.PreviousHolder)
	})

	t.Run("TaskPermitFencedWritesFailForOldTerm", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c := permitClient{t: t, s: s, task: "task-fence"}
		p, ok := c.acquire("a", 0, time.Minute, nil)
		require.True(t, ok)
		_, started, err := c.start("a", p.Term, time.Minute, nil)
		require.NoError(t, err)
		require.True(t, started)
		require.NoError(t, s.TaskPermitRefresh(ctx, c.fence("a", p.Term, nil)))

		// b takes over (a's permit looks stale to b's clock far ahead).
		b, ok := c.acquire("b", 0, time.Minute, at(time.Now().Add(time.Hour)))
		require.True(t, ok)
		require.Equal(t, p.Term+1, b.Term)
		require.Equal(t, store.TaskStatusIdle, b.Status, "a's run does not carry over")

		for name, write := range map[string]func(context.Context, store.TaskPermitFence) error{
			"refresh": s.TaskPermitRefresh, "finish": s.TaskPermitFinish, "release": s.TaskPermitRelease,
		} {
			require.ErrorIs(t, write(ctx, c.fence("a", p.Term, nil)), store.ErrLeaseLost, name)
		}
		_, _, err = c.start("a", p.Term, 0, nil)
		require.ErrorIs(t, err, store.ErrLeaseLost)
		_, _, err = c.start("a", b.Term, 0, nil)
		require.ErrorIs(t, err, store.ErrLeaseLost, "the term alone is not enough")
		got := c.get()
		require.Equal(t, "b", got.Holder)
		require.Equal(t, b.Term, got.Term)
		require.Equal(t, store.TaskStatusIdle, got.Status)
		require.True(t, got.LastRunAt.IsZero(), "a's late finish did not record a run")
		_, _, err = s.TaskPermitStart(ctx, store.TaskPermitStartParams{TaskID: "missing", Holder: "a", Term: 1})
		require.ErrorIs(t, err, store.ErrLeaseLost)
	})

	t.Run("TaskPermitNoSecondStartWhileRunning", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c := permitClient{t: t, s: s, task: "task-run"}
		p, ok := c.acquire("a", 0, time.Minute, nil)
		require.True(t, ok)
		fence := c.fence("a", p.Term, nil)
		require.ErrorIs(t, s.TaskPermitRefresh(ctx, fence), store.ErrLeaseLost, "refresh is for running permits")

		r, started, err := c.start("a", p.Term, time.Hour, nil)
		require.NoError(t, err)
		require.True(t, started, "never ran: due at once")
		require.Equal(t, store.TaskStatusRunning, r.Status)
		require.False(t, r.RunStartedAt.IsZero())

		again, started, err := c.start("a", p.Term, 0, nil)
		require.NoError(t, err)
		require.False(t, started, "still running")
		require.Equal(t, store.TaskStatusRunning, again.Status)
		// Renewal while running keeps the run's status.
		renewed, ok := c.acquire("a", p.Term, time.Minute, nil)
		require.True(t, ok)
		require.Equal(t, store.TaskStatusRunning, renewed.Status)
		require.NoError(t, s.TaskPermitRefresh(ctx, fence))

		require.NoError(t, s.TaskPermitFinish(ctx, fence))
		done := c.get()
		require.Equal(t, store.TaskStatusIdle, done.Status)
		require.False(t, done.LastRunAt.Before(r.RunStartedAt))
		// Finish is idempotent: on an idle permit it records no second run.
		require.NoError(t, s.TaskPermitFinish(ctx, fence))
		require.Equal(t, done.LastRunAt, c.get().LastRunAt)

		_, started, err = c.start("a", p.Term, time.Hour, nil)
		require.NoError(t, err)
		require.False(t, started, "not due for an hour")
		_, started, err = c.start("a", p.Term, 0, nil)
		require.NoError(t, err)
		require.True(t, started)
	})

	t.Run("TaskPermitNotDueBeforeInterval", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c := permitClient{t: t, s: s, task: "task-due"}
		t0 := time.Now().UTC().Truncate(time.Microsecond)
		p, ok := c.acquire("a", 0, time.Hour, at(t0))
		require.True(t, ok)
		_, started, err := c.start("a", p.Term, time.Minute, at(t0))
		require.NoError(t, err)
		require.True(t, started)
		require.NoError(t, s.TaskPermitFinish(ctx, c.fence("a", p.Term, at(t0.Add(time.Second)))))
		require.Equal(t, t0.Add(time.Second), c.get().LastRunAt)

		_, started, err = c.start("a", p.Term, time.Minute, at(t0.Add(time.Minute+time.Second-time.Microsecond)))
		require.NoError(t, err)
		require.False(t, started, "one microsecond early")
		_, started, err = c.start("a", p.Term, time.Minute, at(t0.Add(time.Minute+time.Second)))
		require.NoError(t, err)
		require.True(t, started, "the interval has passed since the end of the last run")
	})

	t.Run("TaskPermitReleaseLetsAnotherTakeOverAtOnce", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c := permitClient{t: t, s: s, task: "task-release"}
		p, ok := c.acquire("a", 0, time.Hour, nil)
		require.True(t, ok)
		require.NoError(t, s.TaskPermitRelease(ctx, c.fence("a", p.Term, nil)))
		released := c.get()
		require.Empty(t, released.Holder)
		require.Equal(t, "a", released.PreviousHolder)
		require.Equal(t, store.TaskStatusIdle, released.Status)
		require.ErrorIs(t, s.TaskPermitRelease(ctx, c.fence("a", p.Term, nil)), store.ErrLeaseLost)

		b, ok := c.acquire("b", 0, time.Hour, nil)
		require.True(t, ok, "a released permit is free although fresh")
		require.Equal(t, p.Term+1, b.Term)
		require.Empty(t, b.PreviousHolder, "taken from nobody, not taken over")
	})

	t.Run("TaskPermitFenceInTransactionHoldsOffTakeover", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		c := permitClient{t: t, s: s, task: "task-tx"}
		p, ok := c.acquire("a", 0, time.Minute, nil)
		require.True(t, ok)
		_, started, err := c.start("a", p.Term, 0, nil)
		require.NoError(t, err)
		require.True(t, started)
		future := time.Now().Add(time.Hour)
		err = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := tx.TaskPermitRefresh(ctx, c.fence("a", p.Term, nil)); err != nil {
				return err
			}
			// A takeover attempted while the fenced transaction is open waits for it: it cannot
			// slip between the fence and the commit.
			wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_, _, err := s.TaskPermitAcquire(wctx, store.TaskPermitAcquireParams{
				TaskID: c.task, Holder: "b", StaleAfter: time.Minute, Now: &future,
			})
			require.Error(t, err, "the takeover must block on the fenced transaction")
			return tx.SettingInsert(ctx, "written-under-term", []byte("1"))
		})
		require.NoError(t, err)
		_, err = s.SettingGet(ctx, "written-under-term")
		require.NoError(t, err)

		// After a takeover the fenced transaction rolls back its write.
		_, ok = c.acquire("b", 0, time.Minute, &future)
		require.True(t, ok)
		err = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := tx.TaskPermitRefresh(ctx, c.fence("a", p.Term, nil)); err != nil {
				return err
			}
			return tx.SettingInsert(ctx, "written-after-loss", []byte("1"))
		})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		_, err = s.SettingGet(ctx, "written-after-loss")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	exerciseExpiry(t, setup)
}
