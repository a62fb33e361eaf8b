package sqlitestore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCheckpointerRestartsTheWALUnderSteadyWrites: with commits landing all the time, a
// background checkpoint alone copies the WAL but never lets it start over (the writer's next
// transaction always begins on a WAL with uncopied frames). The round that finishes on the
// writer's connection must bring the WAL back to its beginning, and nothing committed may be
// lost on the way.
func TestCheckpointerRestartsTheWALUnderSteadyWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, Config{DataDir: dir})
	require.NoError(t, err)
	ck := s.Checkpointer()
	require.NotNil(t, ck)
	ck.restartFrames = 200
	_, err = s.writer.ExecContext(ctx, "CREATE TABLE ckpt_test (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
	require.NoError(t, err)

	var written atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		body := make([]byte, 3000) // about one page per commit
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.writer.ExecContext(ctx, "INSERT INTO ckpt_test (body) VALUES (?)", body); err != nil {
				t.Error(err)
				return
			}
			written.Add(1)
		}
	})

	// A round after a finishing one that finds fewer frames than it did saw the WAL start over.
	var finished, restarts int
	var atFinish int64
	deadline := time.Now().Add(10 * time.Second)
	for restarts < 3 && time.Now().Before(deadline) {
		r, err := ck.runOnce(ctx)
		require.NoError(t, err)
		if atFinish > 0 && r.Frames < atFinish {
			restarts++
		}
		atFinish = 0
		if r.Finished {
			finished++
			atFinish = r.Frames
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.Positive(t, finished, "the WAL never passed %d frames", ck.restartFrames)
	require.GreaterOrEqual(t, restarts, 3, "the WAL did not start over after %d finishing rounds", finished)

	s.Close()
	s, err = Open(ctx, Config{DataDir: dir})
	require.NoError(t, err)
	defer s.Close()
	var n int64
	require.NoError(t, s.reader.QueryRowContext(ctx, "SELECT count(*) FROM ckpt_test").Scan(&n))
	require.Equal(t, written.Load(), n)
}

// TestWriterCheckpointsOnlyWithoutCheckpointer: the writer's commit-time checkpoint is off when
// the Checkpointer copies the WAL, and on when there is none (else nothing would).
func TestWriterCheckpointsOnlyWithoutCheckpointer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		interval time.Duration
		want     int
	}{{0, 0}, {-1, 10_000}} {
		s, err := Open(context.Background(), Config{DataDir: t.TempDir(), CheckpointInterval: tc.interval})
		require.NoError(t, err)
		var n int
		require.NoError(t, s.writer.QueryRow("PRAGMA wal_autocheckpoint").Scan(&n))
		require.Equal(t, tc.want, n, "CheckpointInterval %v", tc.interval)
		require.Equal(t, tc.interval >= 0, s.Checkpointer() != nil)
		s.Close()
	}
}
