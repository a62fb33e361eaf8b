package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// ScratchExpiryDDL creates expiry_scratch, a table of disposable rows for expiry tests, in
// each backend's dialect.
var ScratchExpiryDDL = map[string]string{
	"postgres": `CREATE TABLE expiry_scratch (id BIGSERIAL PRIMARY KEY, note TEXT NOT NULL, expires_at TIMESTAMPTZ NOT NULL);
		CREATE INDEX expiry_scratch_expires ON expiry_scratch (expires_at)`,
	"sqlite": `CREATE TABLE expiry_scratch (id INTEGER PRIMARY KEY, note TEXT NOT NULL, expires_at INTEGER NOT NULL);
		CREATE INDEX expiry_scratch_expires ON expiry_scratch (expires_at)`,
}

// InsertScratchExpiring adds n rows to expiry_scratch that expire at expiresAt.
func InsertScratchExpiring(t testing.TB, sc Scratch, n int, note string, expiresAt time.Time) {
	t.Helper()
	ctx := context.Background()
	for range n {
		var err error
		if sc.Store.Backend() == "postgres" {
			_, err = sc.Exec(ctx, `INSERT INTO expiry_scratch (note, expires_at) VALUES ($1, $2)`, note, expiresAt)
		} else {
			_, err = sc.Exec(ctx, `INSERT INTO expiry_scratch (note, expires_at) VALUES (?, ?)`, note, expiresAt.UnixMicro())
		}
		require.NoError(t, err)
	}
}

// CountScratch counts the rows of expiry_scratch with a note.
func CountScratch(t testing.TB, sc Scratch, note string) int64 {
	t.Helper()
	// An UPDATE that changes nothing reports the rows it matched on both backends.
	q := `UPDATE expiry_scratch SET note = note WHERE note = ?`
	if sc.Store.Backend() == "postgres" {
		q = strings.ReplaceAll(q, "?", "$1")
	}
	n, err := sc.Exec(context.Background(), q, note)
	require.NoError(t, err)
	return n
}

func exerciseExpiry(t *testing.T, setup setupFunc) {
	t.Run("OpQueueParkExpiredKeepsHistory", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		var ops []store.OpQueueInsertParams
		for i := range 7 {
			op := queued(fmt.Sprintf("old-%d", i), fmt.Sprintf("s-old-%d", i), "a")
			op.Lifespan = -time.Duration(10-i) * time.Minute // expired; old-0 first
			ops = append(ops, op)
		}
		for i := range 3 {
			ops = append(ops, queued(fmt.Sprintf("new-%d", i), fmt.Sprintf("s-new-%d", i), "b"))
		}
		ids, err := s.OpQueueUpsertMany(ctx, ops)
		require.NoError(t, err)
		history := []string{"attempt 1 at 2026-01-01T00:00:00Z: cas down", "attempt 2 at 2026-01-01T00:01:00Z: cas down"}
		require.NoError(t, s.OpQueueRetry(ctx, store.OpQueueRetryParams{
			ID: ids[0], InstanceID: "a", Attempts: 2, History: history, AvailableAt: time.Now(),
		}))

		first, err := s.OpQueueParkExpired(ctx, store.OpQueueParkExpiredParams{Limit: 5})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"old-0", "old-1", "old-2", "old-3", "old-4"}, first, "oldest expiry first")
		second, err := s.OpQueueParkExpired(ctx, store.OpQueueParkExpiredParams{Limit: 5})
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"old-5", "old-6"}, second)
		none, err := s.OpQueueParkExpired(ctx, store.OpQueueParkExpiredParams{Limit: 5})
		require.NoError(t, err)
		require.Empty(t, none, "unexpired operations stay queued")
		left, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "b", Limit: 10})
		require.NoError(t, err)
		require.Len(t, left, 3)
		gone, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "a", Limit: 10})
		require.NoError(t, err)
		require.Empty(t, gone)

		parked, err := s.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterOperation, Limit: 100})
		require.NoError(t, err)
		require.Len(t, parked, 7)
		byRef := map[string]store.DeadLetter{}
		for _, d := range parked {
			byRef[d.Ref] = d
			require.Equal(t, store.DeadLetterReasonExpired, d.Reason)
		}
		d := byRef["old-0"]
		require.Equal(t, ops[0].Request, d.Payload)
		require.Equal(t, 2, d.Attempts)
		require.Len(t, d.History, 3)
		require.Equal(t, history, d.History[:2], "history copied")
		require.Regexp(t, `^expired at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(queued at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ by instance a\)$`, d.History[2])
		require.Equal(t, 0, byRef["old-6"].Attempts)
		require.Len(t, byRef["old-6"].History, 1)

		// A test clock two hours ahead expires the rest.
		later, err := s.OpQueueParkExpired(ctx, store.OpQueueParkExpiredParams{Limit: 10, Now: at(time.Now().Add(2 * time.Hour))})
		require.NoError(t, err)
		require.Len(t, later, 3)
	})

	t.Run("OpQueueParkExpiredSkipsRowsOfAnAckInFlight", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		if s.Backend() == "sqlite" {
			t.Skip("SQLite serialises writers: an Ack in flight holds the write lock, so parking waits for it")
		}
		ctx := context.Background()
		a, b := queued("acked", "s1", "a"), queued("stuck", "s2", "a")
		a.Lifespan, b.Lifespan = -time.Minute, -time.Minute
		ids, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{a, b})
		require.NoError(t, err)
		err = s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			n, err := tx.OpQueueDeleteMany(ctx, store.OpQueueDeleteParams{IDs: ids[:1], InstanceID: "a"})
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
			parked, err := s.OpQueueParkExpired(ctx, store.OpQueueParkExpiredParams{Limit: 10})
			require.NoError(t, err)
			require.Equal(t, []string{"stuck"}, parked, "the row the anchor is acking is skipped, not waited for")
			return nil
		})
		require.NoError(t, err)
		parked, err := s.DeadLetterList(ctx, store.DeadLetterListParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, parked, 1, "the anchored operation is not also parked")
		require.Equal(t, "stuck", parked[0].Ref)
	})

	t.Run("ExpiredDeleteManyInBatches", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		sc := OpenScratch(t, s.Backend())
		ctx := context.Background()
		_, err := sc.Exec(ctx, ScratchExpiryDDL[s.Backend()])
		require.NoError(t, err)
		InsertScratchExpiring(t, sc, 12, "old", time.Now().Add(-time.Minute))
		InsertScratchExpiring(t, sc, 4, "young", time.Now().Add(time.Hour))

		p := store.ExpiredDeleteParams{Table: "expiry_scratch", Column: "expires_at", Limit: 5}
		var got []int64
		for {
			n, err := sc.Store.ExpiredDeleteMany(ctx, p)
			require.NoError(t, err)
			got = append(got, n)
			if n < int64(p.Limit) {
				break
			}
		}
		require.Equal(t, []int64{5, 5, 2}, got)
		require.Zero(t, CountScratch(t, sc, "old"))
		require.Equal(t, int64(4), CountScratch(t, sc, "young"), "rows not yet expired stay")

		p.Now = at(time.Now().Add(2 * time.Hour))
		n, err := sc.Store.ExpiredDeleteMany(ctx, p)
		require.NoError(t, err)
		require.Equal(t, int64(4), n)
	})

	t.Run("ExpiredDeleteManyRefusesDurableTablesAndOddNames", func(t *testing.T) {
		t.Parallel()
		s, _ := setup(t)
		ctx := context.Background()
		op := queued("op-1", "s1", "a")
		op.Lifespan = -time.Minute
		_, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{op})
		require.NoError(t, err)
		for _, p := range []store.ExpiredDeleteParams{
			{Table: "op_queue", Column: "expires_at"},
			{Table: "dead_letters", Column: "created_at"},
			{Table: "op_queue; DROP TABLE anchors", Column: "expires_at"},
			{Table: "Op_Queue", Column: "expires_at"},
			{Table: "expiry_scratch", Column: `expires_at" OR 1=1 --`},
			{Table: "", Column: "expires_at"},
			{Table: "1table", Column: "expires_at"},
		} {
			p.Limit = 10
			_, err := s.ExpiredDeleteMany(ctx, p)
			require.Error(t, err, "%q.%q", p.Table, p.Column)
		}
		left, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "a", Limit: 10})
		require.NoError(t, err)
		require.Len(t, left, 1, "an accepted operation is never plainly deleted")
	})
}
