package witnesslog

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOpenMariaDBRefusesBadURLs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	for _, u := range []string{
		"postgres://root@127.0.0.1:3306/db",
		"mysql://root@127.0.0.1:3306/",
		"mysql://root@127.0.0.1:3306/a/b",
		"mysql:///db",
		"mysql://root@127.0.0.1:3306/db?timeout=forever",
	} {
		_, err := OpenMariaDB(context.Background(), tb.cfg, u)
		require.Error(t, err, u)
	}
	c, err := mariaDBConfig("mysql://wit:p%40ss@db.internal/witness?timeout=5s")
	require.NoError(t, err)
	require.Equal(t, "db.internal:3306", c.Addr)
	require.Equal(t, "witness", c.DBName)
	require.Equal(t, "wit", c.User)
	require.Equal(t, "p@ss", c.Passwd)
	require.Equal(t, 5*time.Second, c.Timeout)
}
