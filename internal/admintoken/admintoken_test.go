package admintoken_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/admintoken"
)

func TestLoadOrCreateMakesAPrivateTokenOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	_, err := admintoken.Read(dir)
	require.ErrorIs(t, err, fs.ErrNotExist)

	token, created, err := admintoken.LoadOrCreate(dir)
	require.NoError(t, err)
	require.True(t, created)
	require.Regexp(t, `^[0-9a-f]{64}$`, token)
	for path, mode := range map[string]os.FileMode{dir: 0o700, admintoken.Path(dir): 0o600} {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, mode, fi.Mode().Perm(), path)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	again, created, err := admintoken.LoadOrCreate(dir)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, token, again, "a later start keeps the token")
	read, err := admintoken.Read(dir)
	require.NoError(t, err)
	require.Equal(t, token, read)
}

func TestLoadOrCreateTightensAndKeepsAWrittenToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(admintoken.Path(dir), []byte("  chosen-by-hand \n"), 0o644))
	token, created, err := admintoken.LoadOrCreate(dir)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "chosen-by-hand", token)
	fi, err := os.Stat(admintoken.Path(dir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestConcurrentStartsAgreeOnOneToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := make([]string, 8)
	var wg sync.WaitGroup
	for i := range tokens {
		wg.Go(func() {
			token, _, err := admintoken.LoadOrCreate(dir)
			require.NoError(t, err)
			tokens[i] = token
		})
	}
	wg.Wait()
	for _, tok := range tokens {
		require.Equal(t, tokens[0], tok)
	}
}

func TestReadRefusesWhatCannotBeAToken(t *testing.T) {
	t.Parallel()
	for name, content := range map[string]string{
		"empty":      "\n",
		"two words":  "one two",
		"control":    "abc\x00def",
		"not ascii":  "tökén",
		"a document": strings.Repeat("a", 4097),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(admintoken.Path(dir), []byte(content), 0o600))
			_, err := admintoken.Read(dir)
			require.ErrorIs(t, err, admintoken.ErrInvalid)
			_, _, err = admintoken.LoadOrCreate(dir)
			require.ErrorIs(t, err, admintoken.ErrInvalid, "a broken file is not silently replaced")
		})
	}
}
