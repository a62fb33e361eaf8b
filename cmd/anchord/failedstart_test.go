package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// TestFailedStartLeavesNoTrace: a start that fails (a busy port, a bad parameter, a key file
// found missing after the DID method was recorded) leaves no data directory, so no DID method
// is recorded, and the corrected command starts as if the failed one had never run.
func TestFailedStartLeavesNoTrace(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { busy.Close() })
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"API port in use", []string{"--host-url", busy.Addr().String()}},
		{"admin port in use", []string{"--host-url", anchordtest.FreeAddr(t), "--admin-addr", busy.Addr().String()}},
		{"bad --auth-tokens-def", []string{"--host-url", anchordtest.FreeAddr(t), "--auth-tokens-def", "/sidetree/v1/operations|nosuchtoken"}},
		{"bad --did-method", []string{"--host-url", anchordtest.FreeAddr(t), "--did-method", "ION!"}},
		// Found missing only once the store is open and the DID method recorded.
		{"missing --key-file", []string{"--host-url", anchordtest.FreeAddr(t), "--key-file", filepath.Join(t.TempDir(), "missing.pem")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"serve", "--data-dir", dir, "--did-method", "ion"}, tc.args...)
			p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: args})
			code, err := p.Wait(30 * time.Second)
			require.NoError(t, err, "exits at once")
			require.NotEqual(t, 0, code)
			_, err = os.Stat(dir)
			require.ErrorIs(t, err, os.ErrNotExist, "the failed start left its data directory:\n%s", p.Log())

			// The corrected command starts with another method: nothing was recorded.
			addr := anchordtest.FreeAddr(t)
			ok := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Addr: addr,
				Args: []string{"serve", "--data-dir", dir, "--host-url", addr, "--did-method", "sidetree"}})
			ok.WaitHealthy(60 * time.Second)
			ok.Signal(syscall.SIGTERM)
			code, err = ok.Wait(30 * time.Second)
			require.NoError(t, err)
			require.Equal(t, 0, code, ok.Log())
		})
	}
}

// TestDataDirPermissionsAreTightenedNeverWidened: a start removes group and other bits from an
// existing data directory (0755 becomes 0700) and adds none (0500 stays 0500).
func TestDataDirPermissionsAreTightenedNeverWidened(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ have, want os.FileMode }{{0o755, 0o700}, {0o500, 0o500}} {
		t.Run(tc.have.String(), func(t *testing.T) {
			t.Parallel()
			if tc.have&0o200 == 0 && os.Geteuid() != 0 {
				t.Skip("a read-only data directory only starts as root")
			}
			dir := filepath.Join(t.TempDir(), "data")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, tc.have))
			addr := anchordtest.FreeAddr(t)
			p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Addr: addr, Args: []string{"serve", "--data-dir", dir, "--host-url", addr}})
			p.WaitHealthy(60 * time.Second)
			p.Signal(syscall.SIGTERM)
			code, err := p.Wait(30 * time.Second)
			require.NoError(t, err)
			require.Equal(t, 0, code, p.Log())
			info, err := os.Stat(dir)
			require.NoError(t, err)
			require.Equal(t, tc.want, info.Mode().Perm(), strings.TrimSpace(p.Log()))
		})
	}
}
