package daemon

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/config"
)

// TestDataDirKeepsItsDIDMethod starts an embedded anchord on a fresh data dir, stops it, and
// starts it again with another --did-method: the second start is refused with an error that
// names both methods, and the original method still starts.
func TestDataDirKeepsItsDIDMethod(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := func(method string) (*anchordtest.SyncBuffer, error) {
		cfg := config.Default()
		cfg.HostURL = "127.0.0.1:0"
		cfg.AdminAddr = "127.0.0.1:0"
		cfg.DataDir = dir
		cfg.DIDMethod = method
		log := &anchordtest.SyncBuffer{}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ready := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, cfg, Options{Logger: slog.New(slog.NewTextHandler(log, nil)), Ready: func(addr string) { ready <- addr }})
		}()
		select {
		case <-ready:
			cancel()
			return log, <-done
		case err := <-done:
			return log, err
		case <-time.After(30 * time.Second):
			t.Fatal("anchord neither started nor failed within 30 s")
			return nil, nil
		}
	}

	log, err := start("ion")
	require.NoError(t, err)
	require.Contains(t, log.String(), `msg="DID method" did_method=ion`, "the method is logged at start")
	require.Contains(t, log.String(), "first_start=true")

	_, err = start("sidetree")
	require.ErrorContains(t, err, "--did-method sidetree: this store's DIDs are did:ion:…")
	require.ErrorContains(t, err, "start with --did-method ion")

	log, err = start("ion")
	require.NoError(t, err, "the recorded method still starts")
	require.Contains(t, log.String(), "first_start=false")
}
