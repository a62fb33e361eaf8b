package store

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestReadMigrations(t *testing.T) {
	t.Parallel()
	ms, err := ReadMigrations(fstest.MapFS{
		"m/0002_second.sql": {Data: []byte("B")},
		"m/0001_first.sql":  {Data: []byte("A")},
		"m/README.md":       {Data: []byte("ignored")},
	}, "m")
	require.NoError(t, err)
	require.Equal(t, []Migration{{1, "first", "A"}, {2, "second", "B"}}, ms)

	for name, files := range map[string]fstest.MapFS{
		"no version":   {"m/first.sql": {}},
		"zero version": {"m/0000_x.sql": {}},
		"no name":      {"m/0001_.sql": {}},
		"duplicate":    {"m/0001_a.sql": {}, "m/001_b.sql": {}},
	} {
		_, err := ReadMigrations(files, "m")
		require.Error(t, err, name)
	}
}
