package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

func exerciseDIDStates(t *testing.T, setup setupFunc) {
	t.Run("DIDStates", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()

		_, err := s.SettingGet(ctx, store.DIDStateFillSetting)
		require.ErrorIs(t, err, store.ErrNotFound, "a new database has no states to compute")
		_, err = s.DIDStateGet(ctx, "EiA")
		require.ErrorIs(t, err, store.ErrNotFound)

		inserted, err := s.DIDStateInsertMany(ctx, []store.DIDState{{Suffix: "EiB", State: []byte("b1")}, {Suffix: "EiA", State: []byte("a1")}})
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"EiA": true, "EiB": true}, inserted)
		inserted, err = s.DIDStateInsertMany(ctx, []store.DIDState{{Suffix: "EiA", State: []byte("a2")}, {Suffix: "EiC", State: []byte("c1")}})
		require.NoError(t, err)
		require.Equal(t, map[string]bool{"EiC": true}, inserted, "a DID that has a state keeps it")
		got, err := s.DIDStateGet(ctx, "EiA")
		require.NoError(t, err)
		require.Equal(t, []byte("a1"), got)

		require.NoError(t, s.DIDStatePutMany(ctx, []store.DIDState{{Suffix: "EiC", State: []byte("c2")}, {Suffix: "EiD", State: []byte("d1")}}))
		many, err := s.DIDStateGetMany(ctx, []string{"EiZ", "EiD", "EiC", "EiA"})
		require.NoError(t, err)
		require.Equal(t, map[string][]byte{"EiA": []byte("a1"), "EiC": []byte("c2"), "EiD": []byte("d1")}, many)
		none, err := s.DIDStateGetMany(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)

		require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			locked, err := tx.DIDStateLockMany(ctx, []string{"EiD", "EiA", "EiZ"})
			require.NoError(t, err)
			require.Equal(t, map[string][]byte{"EiA": []byte("a1"), "EiD": []byte("d1")}, locked)
			return tx.DIDStatePutMany(ctx, []store.DIDState{{Suffix: "EiA", State: []byte("a3")}})
		}))
		got, err = s.DIDStateGet(ctx, "EiA")
		require.NoError(t, err)
		require.Equal(t, []byte("a3"), got)

		// Many at once (past SQLite's per-statement chunks), in no order.
		var states []store.DIDState
		var suffixes []string
		for i := range 2500 {
			sfx := fmt.Sprintf("EiMany%04d", (i*7919)%2500)
			suffixes = append(suffixes, sfx)
			states = append(states, store.DIDState{Suffix: sfx, State: []byte(sfx)})
		}
		inserted, err = s.DIDStateInsertMany(ctx, states)
		require.NoError(t, err)
		require.Len(t, inserted, 2500)
		many, err = s.DIDStateGetMany(ctx, suffixes)
		require.NoError(t, err)
		require.Len(t, many, 2500)
		require.Equal(t, []byte("EiMany0042"), many["EiMany0042"])
	})

	t.Run("DIDStatesRolledBackWithTheTransaction", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		boom := errors.New("boom")
		err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			if _, err := tx.DIDStateInsertMany(ctx, []store.DIDState{{Suffix: "EiA", State: []byte("a")}}); err != nil {
				return err
			}
			got, err := tx.DIDStateGet(ctx, "EiA")
			require.NoError(t, err, "a transaction reads its own states")
			require.Equal(t, []byte("a"), got)
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = s.DIDStateGet(ctx, "EiA")
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	// Transactions that each read a few DIDs' states and write them back changed, as observers
	// indexing anchors with operations of the same DIDs do, take turns on each DID: no change is
	// lost, and none deadlocks. On SQLite the one writer serialises them; on PostgreSQL the
	// insert-then-lock order of the contract does.
	t.Run("DIDStatesTakeTurns", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		suffixes := []string{"EiA", "EiB", "EiC", "EiD", "EiE"}
		const workers, rounds = 6, 15
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		var mu sync.Mutex
		want := map[string]int{}
		for w := range workers {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(w), 1))
				for range rounds {
					pick := rng.Perm(len(suffixes))[:1+rng.IntN(len(suffixes))]
					var mine []string
					for _, i := range pick {
						mine = append(mine, suffixes[i])
					}
					err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
						fresh := make([]store.DIDState, len(mine))
						for i, sfx := range mine {
							fresh[i] = store.DIDState{Suffix: sfx, State: []byte("1")}
						}
						inserted, err := tx.DIDStateInsertMany(ctx, fresh)
						if err != nil {
							return err
						}
						var rest []string
						for _, sfx := range mine {
							if !inserted[sfx] {
								rest = append(rest, sfx)
							}
						}
						locked, err := tx.DIDStateLockMany(ctx, rest)
						if err != nil {
							return err
						}
						var put []store.DIDState
						for _, sfx := range rest {
							n, err := strconv.Atoi(string(locked[sfx]))
							if err != nil {
								return fmt.Errorf("state of %s: %w", sfx, err)
							}
							put = append(put, store.DIDState{Suffix: sfx, State: []byte(strconv.Itoa(n + 1))})
						}
						return tx.DIDStatePutMany(ctx, put)
					})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for _, sfx := range mine {
						want[sfx]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		got, err := s.DIDStateGetMany(ctx, suffixes)
		require.NoError(t, err)
		for sfx, n := range want {
			require.Equal(t, strconv.Itoa(n), string(got[sfx]), "every change of %s counted once", sfx)
		}
	})
}
