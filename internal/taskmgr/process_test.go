package taskmgr

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/storetest"
)

// Environment of the helper processes of TestKilledHolderIsTakenOverWithoutOverlap.
const (
	envHelperURL = "ANCHORD_TASKMGR_HELPER_URL"
	envHelperID  = "ANCHORD_TASKMGR_HELPER_ID"
)

// Timing of the process test. The takeover threshold is 1 s: on a loaded machine single
// statements were seen to take 700 ms, and a live holder stalled beyond the threshold would be
// taken over legitimately (its late writes are what fencing is for; this test records runs
// without fencing, to check the manager alone). Runs last longer than their accelerated
// interval, so a run is always due again before it ends.
const (
	procCheck    = 250 * time.Millisecond
	procInterval = 750 * time.Millisecond
	procEvery    = 150 * time.Millisecond
	procRun      = 400 * time.Millisecond
	procTask     = "slow"
)

// procSchema records the task's runs and every change of the permit row, all on the
// database clock.
const procSchema = `
CREATE TABLE helper_runs (
    id         BIGSERIAL   PRIMARY KEY,
    holder     TEXT        NOT NULL,
    term       BIGINT      NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    ended_at   TIMESTAMPTZ
);
CREATE TABLE permit_history (
    seq        BIGSERIAL   PRIMARY KEY,
    holder     TEXT        NOT NULL,
    term       BIGINT      NOT NULL,
    status     TEXT        NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    logged_at  TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
);
CREATE FUNCTION log_permit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO permit_history (holder, term, status, updated_at) VALUES (NEW.holder, NEW.term, NEW.status, NEW.updated_at);
    RETURN NEW;
END $$;
CREATE TRIGGER log_permit AFTER INSERT OR UPDATE ON task_permits FOR EACH ROW EXECUTE FUNCTION log_permit();
`

// TestHelperProcess is the body of the helper processes: a Manager against the schema in
// envHelperURL whose slow task records each run. It does nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	t.Parallel()
	u, id := os.Getenv(envHelperURL), os.Getenv(envHelperID)
	if u == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("instance", id)
	st, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 4, Logger: logger})
	require.NoError(t, err)
	defer st.Close()
	pool, err := pgxpool.New(ctx, u)
	require.NoError(t, err)
	defer pool.Close()

	m, err := New(Config{InstanceID: id, CheckInterval: procCheck, Logger: logger}, st)
	require.NoError(t, err)
	require.NoError(t, m.Register(Task{ID: procTask, Interval: procInterval, Run: func(ctx context.Context, term int64) error {
		bg := context.WithoutCancel(ctx)
		var run int64
		if err := pool.QueryRow(bg, `INSERT INTO helper_runs (holder, term) VALUES ($1, $2) RETURNING id`, id, term).Scan(&run); err != nil {
			return fmt.Errorf("record start: %w", err)
		}
		loop.Sleep(ctx, procRun)
		if _, err := pool.Exec(bg, `UPDATE helper_runs SET ended_at = clock_timestamp() WHERE id = $1`, run); err != nil {
			return fmt.Errorf("record end: %w", err)
		}
		return ctx.Err()
	}, NextIntervalFunc: func() time.Duration { return procEvery }}))
	require.NoError(t, m.Run(ctx))
}

type helperProc struct {
	id   string
	cmd  *exec.Cmd
	out  *anchordtest.SyncBuffer
	done chan struct{}
	err  error
}

func startHelper(t *testing.T, u, id string) *helperProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1", "-test.timeout=120s")
	cmd.Env = append(os.Environ(), envHelperURL+"="+u, envHelperID+"="+id)
	p := &helperProc{id: id, cmd: cmd, out: &anchordtest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", id, p.out.String())
		}
	})
	return p
}

func (p *helperProc) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit", p.id)
	}
}

type procRunRecord struct {
	holder     string
	term       int64
	start, end time.Time // end zero: never recorded (the process died)
}

type permitChange struct {
	holder    string
	term      int64
	status    string
	updatedAt time.Time
	loggedAt  time.Time
}

// TestKilledHolderIsTakenOverWithoutOverlap runs three OS processes, each a Manager on one
// PostgreSQL schema with a task that runs longer than its interval. It kills the holder with
// SIGKILL in the middle of a run, then checks from the database's own records that another
// process took over only after the threshold, that no two runs ever overlapped, and that every
// run ran entirely under the term the permit had when it started.
func TestKilledHolderIsTakenOverWithoutOverlap(t *testing.T) {
	t.Parallel()
	u := storetest.PostgresURL(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, pgstore.Config{URL: u, MaxConns: 2, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	st.Close() // migrated; the helpers use the schema from here on
	pool, err := pgxpool.New(ctx, u)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, procSchema)
	require.NoError(t, err)

	procs := map[string]*helperProc{}
	for i := range 3 {
		id := fmt.Sprintf("proc-%d", i)
		procs[id] = startHelper(t, u, id)
	}

	// Wait for two completed runs and one in progress, then kill the holder of that run.
	var victim string
	anchordtest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() bool {
		var completed int
		var holder *string
		err := pool.QueryRow(ctx, `SELECT count(ended_at), (SELECT holder FROM helper_runs WHERE ended_at IS NULL ORDER BY id DESC LIMIT 1)
			FROM helper_runs`).Scan(&completed, &holder)
		if err != nil || completed < 2 || holder == nil {
			return false
		}
		victim = *holder
		return true
	}, "two runs, then one in progress")
	require.NoError(t, procs[victim].cmd.Process.Signal(syscall.SIGKILL))
	procs[victim].wait(t)
	var killedAt time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&killedAt))
	var ee *exec.ExitError
	require.ErrorAs(t, procs[victim].err, &ee)
	require.Equal(t, "signal: killed", ee.Error())

	// Another process takes over and completes two runs.
	anchordtest.Eventually(t, 60*time.Second, 20*time.Millisecond, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM helper_runs WHERE holder <> $1 AND started_at > $2 AND ended_at IS NOT NULL`,
			victim, killedAt).Scan(&n)
		return err == nil && n >= 2
	}, "two runs by a survivor after the kill")
	for id, p := range procs {
		if id == victim {
			continue
		}
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	}
	for id, p := range procs {
		if id == victim {
			continue
		}
		p.wait(t)
		require.NoError(t, p.err, "%s exits cleanly on SIGTERM", id)
	}

	runs := queryRuns(t, pool)
	history := queryHistory(t, pool)
	threshold := procCheck + procInterval

	// No two runs overlapped. The killed run ended, at the latest, when its process died.
	for i := range runs {
		if runs[i].end.IsZero() {
			require.Equal(t, victim, runs[i].holder, "only the killed process left a run unfinished")
			runs[i].end = killedAt
		}
	}
	for i := 1; i < len(runs); i++ {
		require.True(t, runs[i].start.After(runs[i-1].end), "run %d (%s, term %d, %s) overlaps run %d (%s, term %d, ended %s)",
			i, runs[i].holder, runs[i].term, runs[i].start, i-1, runs[i-1].holder, runs[i-1].term, runs[i-1].end)
	}

	// Every run carries the term of the permit when it started, and the permit did not change
	// hands before the run ended.
	for i, r := range runs {
		var current *permitChange
		for j := range history {
			if !history[j].loggedAt.Before(r.start) {
				break
			}
			current = &history[j]
		}
		require.NotNil(t, current, "run %d started before any permit existed", i)
		require.Equal(t, r.holder, current.holder, "run %d holder", i)
		require.Equal(t, r.term, current.term, "run %d term", i)
		require.Equal(t, "running", current.status, "run %d started under a running permit", i)
		for _, h := range history {
			if h.loggedAt.After(r.start) && h.loggedAt.Before(r.end) {
				require.Equal(t, r.term, h.term, "run %d (term %d) saw the permit change to term %d", i, r.term, h.term)
			}
		}
	}

	// The takeover came after the victim's last write plus the threshold, by the database clock.
	var victimLast, takeover *permitChange
	for j := range history {
		h := &history[j]
		if h.holder == victim {
			victimLast, takeover = h, nil
		} else if victimLast != nil && takeover == nil && h.term > victimLast.term {
			takeover = h
		}
	}
	require.NotNil(t, victimLast)
	require.NotNil(t, takeover, "a survivor took the permit over")
	require.Equal(t, victimLast.term+1, takeover.term)
	silence := takeover.updatedAt.Sub(victimLast.updatedAt)
	require.Greater(t, silence, threshold, "taken over only once stale")
	t.Logf("SIGKILL of %s (term %d): takeover by %s (term %d) %s after the kill, %s after its last refresh (threshold %s); %d runs, none overlapping",
		victim, victimLast.term, takeover.holder, takeover.term, takeover.updatedAt.Sub(killedAt).Round(time.Millisecond),
		silence.Round(time.Millisecond), threshold, len(runs))
}

func queryRuns(t *testing.T, pool *pgxpool.Pool) []procRunRecord {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT holder, term, started_at, ended_at FROM helper_runs ORDER BY started_at`)
	require.NoError(t, err)
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (procRunRecord, error) {
		var rec procRunRecord
		var end *time.Time
		err := r.Scan(&rec.holder, &rec.term, &rec.start, &end)
		if end != nil {
			rec.end = *end
		}
		return rec, err
	})
	require.NoError(t, err)
	require.True(t, sort.SliceIsSorted(runs, func(i, j int) bool { return runs[i].start.Before(runs[j].start) }))
	return runs
}

func queryHistory(t *testing.T, pool *pgxpool.Pool) []permitChange {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT holder, term, status, updated_at, logged_at FROM permit_history ORDER BY seq`)
	require.NoError(t, err)
	history, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (permitChange, error) {
		var h permitChange
		return h, r.Scan(&h.holder, &h.term, &h.status, &h.updatedAt, &h.loggedAt)
	})
	require.NoError(t, err)
	require.NotEmpty(t, history)
	return history
}
