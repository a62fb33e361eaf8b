package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// Exercise runs the conformance suite against a backend. newOpener returns an opener for a
// fresh, empty database each time it is called; migrations lists the backend's embedded
// migrations.
func Exercise(t *testing.T, newOpener func(t testing.TB) Opener, migrations []store.Migration) {
	t.Helper()

	setup := func(t *testing.T) (store.Store, Opener) {
		t.Helper()
		o := newOpener(t)
		return Open(t, o), o
	}

	t.Run("MigrationsAppliedOnceAndIdempotent", func(t *testing.T) {
		t.Parallel()
		s, opener := setup(t)
		ctx := context.Background()
		applied, err := s.MigrationList(ctx)
		require.NoError(t, err)
		require.Len(t, applied, len(migrations))
		for i, m := range migrations {
			require.Equal(t, m.Version, applied[i].Version)
			require.Equal(t, m.Name, applied[i].Name)
			require.False(t, applied[i].AppliedAt.IsZero())
		}

		// Reopening, even by several instances at once, applies nothing again.
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				s2, err := opener(ctx)
				if err != nil {
					errs <- err
					return
				}
				s2.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		again, err := s.MigrationList(ctx)
		require.NoError(t, err)
		require.Equal(t, applied, again)
	})

	t.Run("NowIsTheDatabaseClock", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		a, err := s.Now(ctx)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), a, 5*time.Second, "test services run on this host")
		require.Equal(t, time.UTC, a.Location())
		b, err := s.Now(ctx)
		require.NoError(t, err)
		require.False(t, b.Before(a))
	})

	t.Run("Ping", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		require.NoError(t, s.Ping(context.Background()))
	})

	t.Run("InTxCommitsOrRollsBack", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()

		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			return tx.SettingInsert(ctx, "committed", []byte("yes"))
		}))
		v, err := s.SettingGet(ctx, "committed")
		require.NoError(t, err)
		require.Equal(t, []byte("yes"), v)

		boom := errors.New("boom")
		err = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := tx.SettingInsert(ctx, "rolled-back", []byte("no")); err != nil {
				return err
			}
			got, err := tx.SettingGet(ctx, "rolled-back")
			require.NoError(t, err, "a transaction reads its own writes")
			require.Equal(t, []byte("no"), got)
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = s.SettingGet(ctx, "rolled-back")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("OnCommitRunsOnlyAfterCommit", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()

		var ran []string
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			store.OnCommit(ctx, func() { ran = append(ran, "first") })
			store.OnCommit(ctx, func() { ran = append(ran, "second") })
			require.Empty(t, ran, "hooks wait for the commit")
			return tx.SettingInsert(ctx, "hooked", []byte("yes"))
		}))
		require.Equal(t, []string{"first", "second"}, ran)

		ran = nil
		boom := errors.New("boom")
		require.ErrorIs(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			store.OnCommit(ctx, func() { ran = append(ran, "rolled back") })
			return boom
		}), boom)
		require.Empty(t, ran, "a rollback runs no hook")

		store.OnCommit(ctx, func() { ran = append(ran, "outside") })
		require.Equal(t, []string{"outside"}, ran, "outside a transaction a hook runs at once")
	})

	t.Run("OnVisibleRunsOnceOthersSeeTheCommit", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()

		var ran []string
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			store.OnCommit(ctx, func() { ran = append(ran, "durable") })
			store.OnVisible(ctx, func() {
				v, err := s.SettingGet(ctx, "seen")
				require.NoError(t, err, "another connection sees the commit")
				require.Equal(t, []byte("yes"), v)
				ran = append(ran, "visible")
			})
			require.Empty(t, ran, "hooks wait for the commit")
			return tx.SettingInsert(ctx, "seen", []byte("yes"))
		}))
		require.Equal(t, []string{"visible", "durable"}, ran, "seen before (or when) durable")

		ran = nil
		boom := errors.New("boom")
		require.ErrorIs(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			store.OnVisible(ctx, func() { ran = append(ran, "rolled back") })
			return boom
		}), boom)
		require.Empty(t, ran, "a rollback runs no hook")

		store.OnVisible(ctx, func() { ran = append(ran, "outside") })
		require.Equal(t, []string{"outside"}, ran, "outside a transaction a hook runs at once")
	})

	t.Run("InTxSerialisesWriters", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		// Many concurrent first-start races on one name: exactly one insert wins and every
		// loser sees ErrConflict, never another error.
		var wg sync.WaitGroup
		results := make(chan error, 16)
		for i := range 16 {
			wg.Go(func() {
				results <- s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
					return tx.SettingInsert(ctx, "race", []byte{byte(i)})
				})
			})
		}
		wg.Wait()
		close(results)
		wins := 0
		for err := range results {
			if err == nil {
				wins++
				continue
			}
			require.ErrorIs(t, err, store.ErrConflict)
		}
		require.Equal(t, 1, wins)
	})

	exerciseOpQueue(t, setup)
	exercisePipeline(t, setup)
	exerciseExplorer(t, setup)
	exerciseCluster(t, setup)
	exerciseCASPins(t, setup)
	exerciseLogCheckpoints(t, setup)
	exerciseCosignedCheckpoints(t, setup)
	exerciseWitness(t, setup)
	exerciseAnchoredOps(t, setup)
	exerciseDIDStates(t, setup)
	exerciseTask(t, setup)
	exerciseLedger(t, setup)
	exerciseAnchorLinks(t, setup)
	exerciseAnchorClock(t, setup)
	exerciseActivity(t, setup)
	exerciseInboxBounds(t, setup)

	t.Run("Settings", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		_, err := s.SettingGet(ctx, "missing")
		require.ErrorIs(t, err, store.ErrNotFound)
		name := randomName("key")
		require.NoError(t, s.SettingInsert(ctx, name, []byte{0, 1, 2, 255}))
		err = s.SettingInsert(ctx, name, []byte("other"))
		require.ErrorIs(t, err, store.ErrConflict)
		v, err := s.SettingGet(ctx, name)
		require.NoError(t, err)
		require.Equal(t, []byte{0, 1, 2, 255}, v, "binary-safe, first value kept")
	})

	t.Run("SettingPutReplaces", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		name := randomName("put")
		get := func() []byte {
			t.Helper()
			v, err := s.SettingGet(ctx, name)
			require.NoError(t, err)
			return v
		}

		require.NoError(t, s.SettingPut(ctx, name, []byte("first")), "a missing setting is created")
		require.Equal(t, []byte("first"), get())
		require.NoError(t, s.SettingPut(ctx, name, []byte{0, 255}))
		require.Equal(t, []byte{0, 255}, get(), "the last value wins, binary-safe")
		require.ErrorIs(t, s.SettingInsert(ctx, name, []byte("x")), store.ErrConflict, "a put setting exists for Insert")

		require.NoError(t, s.SettingPut(ctx, name, nil))
		require.Empty(t, get(), "a nil value is stored as the empty value")
		require.NoError(t, s.SettingPut(ctx, name, []byte("again")), "an empty value is replaced like any other")
		require.Equal(t, []byte("again"), get())

		inserted := randomName("inserted")
		require.NoError(t, s.SettingInsert(ctx, inserted, []byte("old")))
		require.NoError(t, s.SettingPut(ctx, inserted, []byte("new")), "an inserted setting is replaced")
		v, err := s.SettingGet(ctx, inserted)
		require.NoError(t, err)
		require.Equal(t, []byte("new"), v)

		boom := errors.New("boom")
		require.ErrorIs(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if err := tx.SettingPut(ctx, name, []byte("rolled back")); err != nil {
				return err
			}
			got, err := tx.SettingGet(ctx, name)
			require.NoError(t, err)
			require.Equal(t, []byte("rolled back"), got, "a transaction reads its own put")
			return boom
		}), boom)
		require.Equal(t, []byte("again"), get(), "a rolled-back put leaves the value")
		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			return tx.SettingPut(ctx, name, []byte("committed"))
		}))
		require.Equal(t, []byte("committed"), get())
	})
}
