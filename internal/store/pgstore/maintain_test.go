package pgstore_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store/pgstore"
	"github.com/anchord/anchord/internal/store/storetest"
)

// openMaintained opens a store on a schema of its own and returns its Maintainer (which does
// nothing until it is asked) and another connection to the schema.
func openMaintained(t *testing.T) (*pgstore.Maintainer, *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	url := storetest.PostgresURL(t)
	s, err := pgstore.Open(ctx, pgstore.Config{URL: url, MaxConns: 4, MaintainInterval: time.Hour, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	m := s.Maintainer()
	require.NotNil(t, m)
	other, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	return m, other
}

// A table that grew past the threshold gets statistics (the planner had none: reltuples -1),
// once: the next round finds nothing to do; and a round another instance holds is left to it.
func TestAnalyzerGivesGrownTablesStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, other := openMaintained(t)
	reltuples := func() float64 {
		var n float64
		require.NoError(t, other.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = 'did_operations'::regclass`).Scan(&n))
		return n
	}
	require.EqualValues(t, -1, reltuples(), "a new table has no statistics")

	// Rows are inserted on this connection, which then reports them to the statistics system
	// at once instead of up to ten seconds later.
	insert := func(seq, n int) {
		_, err := other.Exec(ctx, `INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request)
			SELECT 'EiS' || i, $1, i, 'create', '\x7b7d' FROM generate_series(1, $2) i`, seq, n)
		require.NoError(t, err)
		_, err = other.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
		require.NoError(t, err)
	}
	insert(1, 500)

	var done []string
	var err error
	require.Eventually(t, func() bool {
		done, err = m.AnalyzeOnce(ctx)
		return assert.NoError(t, err) && len(done) > 0
	}, 30*time.Second, 200*time.Millisecond)
	require.Contains(t, done, "did_operations")
	require.EqualValues(t, 500, reltuples())
	done, err = m.AnalyzeOnce(ctx)
	require.NoError(t, err)
	require.Empty(t, done, "analyzed tables are not analyzed again until they change")

	// Another instance holds the round: this one does nothing, even with a stale table.
	insert(2, 501)
	_, err = other.Exec(ctx, `SELECT pg_advisory_lock(hashtext('anchord_analyze:' || current_schema()))`)
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the statistics system has seen the rows: the table is stale
		var n int64
		err := other.QueryRow(ctx, `SELECT n_mod_since_analyze FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'did_operations'`).Scan(&n)
		return assert.NoError(t, err) && n > 100
	}, 30*time.Second, 200*time.Millisecond)
	done, err = m.AnalyzeOnce(ctx)
	require.NoError(t, err)
	require.Empty(t, done, "the round is another instance's")
	require.EqualValues(t, 500, reltuples())
	_, err = other.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		done, err = m.AnalyzeOnce(ctx)
		return assert.NoError(t, err) && len(done) > 0
	}, 30*time.Second, 200*time.Millisecond)
	require.EqualValues(t, 1001, reltuples())
}

// A table whose rows were deleted past the threshold is vacuumed (autovacuum is off on the
// test server, as on some managed ones: nothing else would); a round another instance holds is
// left to it.
func TestMaintainerVacuumsDeadRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m, other := openMaintained(t)
	var autovacuum string
	require.NoError(t, other.QueryRow(ctx, `SHOW autovacuum`).Scan(&autovacuum))
	if autovacuum == "on" {
		t.Skip("this server's autovacuum would vacuum the table first")
	}
	dead := func() int64 {
		var n int64
		require.NoError(t, other.QueryRow(ctx, `SELECT n_dead_tup FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'did_operations'`).Scan(&n))
		return n
	}
	// Rows inserted and deleted, as the queue's are, reported to the statistics system at once.
	churn := func(seq int) {
		_, err := other.Exec(ctx, `INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request)
			SELECT 'EiS' || i, $1, i, 'create', '\x7b7d' FROM generate_series(1, 500) i`, seq)
		require.NoError(t, err)
		_, err = other.Exec(ctx, `DELETE FROM did_operations WHERE anchor_seq = $1`, seq)
		require.NoError(t, err)
		_, err = other.Exec(ctx, `SELECT pg_stat_force_next_flush()`)
		require.NoError(t, err)
	}
	churn(1)
	require.Eventually(t, func() bool { return dead() >= 500 }, 30*time.Second, 200*time.Millisecond)

	// Another instance holds the round: this one does nothing.
	_, err := other.Exec(ctx, `SELECT pg_advisory_lock(hashtext('anchord_vacuum:' || current_schema()))`)
	require.NoError(t, err)
	done, err := m.VacuumOnce(ctx)
	require.NoError(t, err)
	require.Empty(t, done, "the round is another instance's")
	_, err = other.Exec(ctx, `SELECT pg_advisory_unlock_all()`)
	require.NoError(t, err)

	done, err = m.VacuumOnce(ctx)
	require.NoError(t, err)
	require.Contains(t, done, "did_operations")
	// Whether the dead rows could be removed depends on the oldest snapshot of the server, which
	// the package's other tests hold; that the table was vacuumed is what the statistics say.
	require.Eventually(t, func() bool {
		var n int64
		require.NoError(t, other.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'did_operations'`).Scan(&n))
		return n == 1
	}, 30*time.Second, 200*time.Millisecond, "the table was vacuumed once")

	// The lock went back with the connection: a second round could take it.
	var free bool
	require.NoError(t, other.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext('anchord_vacuum:' || current_schema()))`).Scan(&free))
	require.True(t, free, "the round's lock is released")
}

// A round reads the schema's indexes and the server's shared buffers as PostgreSQL reports
// them, and says once, not every round, that the indexes outgrew the buffers, and once that
// they fit again.
func TestMaintainerSizesTheIndexesAgainstTheSharedBuffers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.PostgresURL(t)
	var log anchordtest.SyncBuffer
	s, err := pgstore.Open(ctx, pgstore.Config{URL: url, MaxConns: 4, MaintainInterval: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	m := s.Maintainer()
	other, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(context.Background()) })

	empty, buffers, err := m.SizeOnce(ctx)
	require.NoError(t, err)
	_, err = other.Exec(ctx, `INSERT INTO did_operations (suffix, anchor_seq, op_index, op_type, request)
		SELECT 'EiS' || i, 1, i, 'create', '\x7b7d' FROM generate_series(1, 5000) i`)
	require.NoError(t, err)
	indexes, _, err := m.SizeOnce(ctx)
	require.NoError(t, err)
	var want, wantBuffers int64
	require.NoError(t, other.QueryRow(ctx, `SELECT sum(pg_relation_size(indexrelid))::bigint FROM pg_stat_user_indexes
		WHERE schemaname = current_schema()`).Scan(&want))
	require.NoError(t, other.QueryRow(ctx, `SELECT setting::bigint * current_setting('block_size')::bigint
		FROM pg_settings WHERE name = 'shared_buffers'`).Scan(&wantBuffers))
	require.Equal(t, want, indexes)
	require.Greater(t, indexes, empty, "5,000 operations grew the operations' key")
	require.Equal(t, wantBuffers, buffers)
	require.NotContains(t, log.String(), "outgrow", "a new schema's indexes fit in any server's buffers")

	const warning = "outgrow PostgreSQL's shared_buffers"
	m.NoteSize(ctx, 2<<30, 1<<30)
	m.NoteSize(ctx, 3<<30, 1<<30)
	require.Equal(t, 1, strings.Count(log.String(), warning), log.String())
	require.Contains(t, log.String(), "index_bytes=2147483648 shared_buffers_bytes=1073741824")
	m.NoteSize(ctx, 1<<30, 2<<30)
	m.NoteSize(ctx, 1<<30, 2<<30)
	require.Equal(t, 1, strings.Count(log.String(), "fit in PostgreSQL's shared_buffers again"), log.String())
	m.NoteSize(ctx, 3<<30, 2<<30)
	require.Equal(t, 2, strings.Count(log.String(), warning), "outgrown again: said again")
}
