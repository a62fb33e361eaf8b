package filemode_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/filemode"
)

func TestTightenNeverWidens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		have, limit, want fs.FileMode
	}{
		{0o755, 0o700, 0o700},
		{0o500, 0o700, 0o500},
		{0o700, 0o700, 0o700},
		{0o644, 0o600, 0o600},
		{0o400, 0o600, 0o400},
		{0o040, 0o600, 0o000},
	} {
		path := filepath.Join(t.TempDir(), "f")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		require.NoError(t, os.Chmod(path, tc.have))
		require.NoError(t, filemode.Tighten(path, tc.limit))
		info, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, tc.want, info.Mode().Perm(), "%o tightened to %o", tc.have, tc.limit)
	}
	require.ErrorIs(t, filemode.Tighten(filepath.Join(t.TempDir(), "missing"), 0o700), fs.ErrNotExist)
}
