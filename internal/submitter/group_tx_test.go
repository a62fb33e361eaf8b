package submitter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestGroupTxIsolatesFailures(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		require.NoError(t, st.SettingInsert(ctx, "taken", []byte("x")))
		g := &groupTx{st: st}
		const writers = 40
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				<-start
				errs[i] = g.Do(ctx, func(ctx context.Context, tx store.Executor) error {
					switch i {
					case 7: // breaks its transaction: a unique violation aborts it on PostgreSQL
						return tx.SettingInsert(ctx, "taken", []byte("y"))
					case 9: // a fenced write that matched nothing
						return fmt.Errorf("fenced: %w", store.ErrLeaseLost)
					}
					return tx.SettingInsert(ctx, fmt.Sprintf("group-%02d", i), []byte{byte(i)})
				})
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			switch i {
			case 7:
				require.ErrorIs(t, err, store.ErrConflict)
			case 9:
				require.ErrorIs(t, err, store.ErrLeaseLost)
			default:
				require.NoError(t, err, "writer %d", i)
				v, err := st.SettingGet(ctx, fmt.Sprintf("group-%02d", i))
				require.NoError(t, err, "writer %d committed", i)
				require.Equal(t, []byte{byte(i)}, v)
			}
		}
		v, err := st.SettingGet(ctx, "taken")
		require.NoError(t, err)
		require.Equal(t, []byte("x"), v)
	})
}

func TestGroupTxReportsAnErrorOfItsOwn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		boom := errors.New("boom")
		err := (&groupTx{st: st}).Do(context.Background(), func(ctx context.Context, tx store.Executor) error {
			if err := tx.SettingInsert(ctx, "rolled-back", []byte("no")); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = st.SettingGet(context.Background(), "rolled-back")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}
