package daemon

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// TestEmbeddedMovesAnOlderIndexLayout starts an embedded anchord on a database in the per-DID
// index layout of one that indexed operations before migration 30 (an index of did_operations by
// suffix, did_states keyed by suffix, a state without positions): while it serves, the pass
// moves the database to the current layout, and the DID's operations are found as before.
func TestEmbeddedMovesAnOlderIndexLayout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := config.Default()
	cfg.HostURL = "127.0.0.1:0"
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.DataDir = dir
	log := &anchordtest.SyncBuffer{}
	run := func(until func() bool) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- Run(ctx, cfg, Options{Logger: slog.New(slog.NewTextHandler(log, nil))}) }()
		deadline := time.After(30 * time.Second)
		for !until() {
			select {
			case err := <-done:
				t.Fatalf("anchord stopped: %v", err)
			case <-deadline:
				t.Fatalf("anchord did not get there within 30 s; its log:\n%s", log.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		cancel()
		require.NoError(t, <-done)
	}
	run(func() bool { return strings.Contains(log.String(), "anchord started") })

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, sqlitestore.FileName))
	require.NoError(t, err)
	_, err = db.Exec(`DROP TABLE did_states;
		CREATE TABLE did_states (suffix TEXT PRIMARY KEY, state BLOB NOT NULL, positions BLOB) WITHOUT ROWID;
		CREATE INDEX did_operations_suffix ON did_operations (suffix);
		INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request) VALUES
			('EiAolder', 1, 0, 'create', x''), ('EiAolder', 2, 3, 'update', x''), ('EiAnewer', 2, 0, 'create', x'');
		INSERT INTO did_states (suffix, state) VALUES ('EiAolder', x'01');
		INSERT INTO did_states (suffix, state, positions) VALUES ('EiAnewer', x'02', x'0200')`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	run(func() bool { return strings.Contains(log.String(), "the database has the current one") })
	for _, phase := range []string{"positions", "copy", "delete"} {
		require.Contains(t, log.String(), `msg="per-DID index layout: phase done" component=store phase=`+phase)
	}

	s, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: dir})
	require.NoError(t, err)
	defer s.Close()
	got, err := s.DIDOperationList(context.Background(), "EiAolder")
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{
		{Suffix: "EiAolder", AnchorSeq: 1, Index: 0, Type: "create"},
		{Suffix: "EiAolder", AnchorSeq: 2, Index: 3, Type: "update"},
	}, got)
	state, err := s.DIDStateGet(context.Background(), "EiAnewer")
	require.NoError(t, err)
	require.Equal(t, []byte{2}, state)
}
