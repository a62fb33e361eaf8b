package witness

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestPolicyLoadSave(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		p, err := LoadPolicy(ctx, st)
		require.NoError(t, err)
		require.Equal(t, DefaultPolicy(), p, "an unset policy is the default")

		want := mustParse(t, "OutOf(2,system) AND MinPercent(50,batch) LogRequired")
		require.NoError(t, SavePolicy(ctx, st, want))
		raw, err := st.SettingGet(ctx, PolicySetting)
		require.NoError(t, err)
		require.Equal(t, "MinPercent(50,batch) AND OutOf(2,system) LogRequired", string(raw), "stored in canonical form")
		got, err := LoadPolicy(ctx, st)
		require.NoError(t, err)
		require.Equal(t, want, got)

		or := mustParse(t, "MinPercent(30,system) OR MinPercent(70,batch)")
		require.NoError(t, SavePolicy(ctx, st, or), "a second save replaces the first")
		got, err = LoadPolicy(ctx, st)
		require.NoError(t, err)
		require.Equal(t, or, got)

		require.NoError(t, SavePolicy(ctx, st, DefaultPolicy()), "the default can be set back")
		raw, err = st.SettingGet(ctx, PolicySetting)
		require.NoError(t, err)
		require.Empty(t, raw)
		got, err = LoadPolicy(ctx, st)
		require.NoError(t, err)
		require.Equal(t, DefaultPolicy(), got)

		// A SavePolicy inside a transaction goes with it.
		require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			return SavePolicy(ctx, tx, or)
		}))
		got, err = LoadPolicy(ctx, st)
		require.NoError(t, err)
		require.Equal(t, or, got)
	})
}

func TestLoadPolicyErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	st := storetest.Open(t, storetest.SQLiteOpener(t))
	require.NoError(t, st.SettingPut(ctx, PolicySetting, []byte("OutOf(x,system)")))
	_, err := LoadPolicy(ctx, st)
	require.ErrorContains(t, err, `load witness policy "OutOf(x,system)": first argument for OutOf policy must be an integer`,
		"a stored policy that does not parse is an error, not the default")

	closed := storetest.Open(t, storetest.SQLiteOpener(t))
	closed.Close()
	_, err = LoadPolicy(ctx, closed)
	require.ErrorContains(t, err, "load witness policy: get setting")
	require.ErrorContains(t, SavePolicy(ctx, closed, DefaultPolicy()), "save witness policy: put setting")
}
