package sqlitestore

import (
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
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
	s, err := Open(ctx, Config{DataDir: dir, CheckpointInterval: CheckpointIntervalDefault})
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

	// The WAL header's checkpoint sequence number (bytes 12-15) goes up each time the WAL starts
	// over. Every finish must be followed by one by the next round (without the finish on the
	// writer's connection the WAL starts over only now and then, by luck of timing).
	walSeq := func() uint32 {
		f, err := os.Open(filepath.Join(dir, FileName+"-wal"))
		require.NoError(t, err)
		defer f.Close()
		var h [16]byte
		_, err = io.ReadFull(f, h[:])
		require.NoError(t, err)
		return binary.BigEndian.Uint32(h[12:])
	}
	// A finish restarts the WAL at the writer's next commit, so each finish is checked once
	// the writer has committed twice more: on a busy machine the writer may not run between two
	// rounds, and a count of rounds or seconds would then blame the checkpointer for the
	// scheduler. The deadline only keeps a broken checkpointer from hanging the test.
	var finished, restarts int
	deadline := time.Now().Add(2 * time.Minute)
	for finished < 5 && time.Now().Before(deadline) {
		seq := walSeq()
		r, err := ck.runOnce(ctx)
		require.NoError(t, err)
		if !r.Finished {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		finished++
		after := written.Load()
		for written.Load() < after+2 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if walSeq() != seq {
			restarts++
		}
	}
	close(stop)
	wg.Wait()
	require.GreaterOrEqual(t, finished, 5, "the WAL did not pass %d frames often enough", ck.restartFrames)
	require.Equal(t, finished, restarts, "the WAL did not start over after each finishing round")

	s.Close()
	s, err = Open(ctx, Config{DataDir: dir})
	require.NoError(t, err)
	defer s.Close()
	var n int64
	require.NoError(t, s.reader.QueryRowContext(ctx, "SELECT count(*) FROM ckpt_test").Scan(&n))
	require.Equal(t, written.Load(), n)
}

// TestWriterCheckpointsOnlyWhileNoCheckpointerRuns: the writer's commit-time checkpoint is off
// while the Checkpointer runs, and on before it starts, after it stops and without one (else
// nothing would copy the WAL).
func TestWriterCheckpointsOnlyWhileNoCheckpointerRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	autocheckpoint := func(s *Store) int {
		var n int
		require.NoError(t, s.writer.QueryRow("PRAGMA wal_autocheckpoint").Scan(&n))
		return n
	}
	s, err := Open(ctx, Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	require.Nil(t, s.Checkpointer())
	require.Equal(t, walRestartFrames, autocheckpoint(s))
	s.Close()

	s, err = Open(ctx, Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, walRestartFrames, autocheckpoint(s), "before the Checkpointer runs")
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Checkpointer().Run(runCtx) }()
	require.Eventually(t, func() bool { return autocheckpoint(s) == 0 }, 10*time.Second, 10*time.Millisecond, "while it runs")
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, walRestartFrames, autocheckpoint(s), "after it stopped")
}
