package sqlitestore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// TestUpsertManyReturnsEachOperationsID queues more operations than one statement takes, one of
// them already queued, and finds each returned id on the row of its own operation.
func TestUpsertManyReturnsEachOperationsID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer s.Close()
	op := func(i int) store.OpQueueInsertParams {
		return store.OpQueueInsertParams{
			OpID: fmt.Sprintf("op-%03d", i), Suffix: fmt.Sprintf("s-%03d", i), Type: "create",
			Request: []byte(fmt.Sprintf(`{"n":%d}`, i)), InstanceID: "a", Lifespan: time.Hour,
		}
	}
	first, err := s.OpQueueUpsertMany(ctx, []store.OpQueueInsertParams{op(137)})
	require.NoError(t, err)

	var ops []store.OpQueueInsertParams
	for i := 250; i > 0; i-- { // op_ids in descending order, ids ascending
		ops = append(ops, op(i))
	}
	ids, err := s.OpQueueUpsertMany(ctx, ops)
	require.NoError(t, err)
	require.Len(t, ids, len(ops))
	rows, err := s.OpQueueList(ctx, store.OpQueueListParams{InstanceID: "a", Limit: 1000})
	require.NoError(t, err)
	require.Len(t, rows, 250)
	byID := map[int64]string{}
	for _, r := range rows {
		byID[r.ID] = r.OpID
	}
	for i, id := range ids {
		require.Equal(t, ops[i].OpID, byID[id], "id of operation %d", i)
	}
	require.Equal(t, first[0], ids[250-137], "an operation queued again keeps its row")
}
