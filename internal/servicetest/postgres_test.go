package servicetest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func TestPostgresStopStartKill(t *testing.T) {
	t.Parallel()
	pg := StartPostgres(t)
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, pg.URL())
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return c.Ping(ctx)
	}
	require.NoError(t, ping())
	pg.Stop(t)
	require.Error(t, ping())
	pg.Start(t)
	require.NoError(t, ping())
	pg.Kill(t)
	require.Eventually(t, func() bool { return ping() != nil }, 10*time.Second, 50*time.Millisecond)
	pg.Start(t)
	require.NoError(t, ping(), "restarts after a crash (recovery)")
}
