package sqlitestore_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// benchAnchorOps is the size of a full batch (MAX_OPERATION_COUNT).
const benchAnchorOps = 10_000

// benchRequestSize is about the size of the load generator's create request.
const benchRequestSize = 700

// benchOps returns one anchor's index rows with random suffixes, as a batch of creates has.
func benchOps(seq int64) []store.DIDOperation {
	ops := make([]store.DIDOperation, benchAnchorOps)
	raw := make([]byte, 34)
	for i := range ops {
		_, _ = rand.Read(raw)
		req := make([]byte, benchRequestSize)
		_, _ = rand.Read(req)
		ops[i] = store.DIDOperation{
			Suffix: "EiA" + base64.RawURLEncoding.EncodeToString(raw)[:43], AnchorSeq: seq, Index: i,
			Type: "create", Request: req,
		}
	}
	return ops
}

func openBench(b *testing.B) *sqlitestore.Store {
	b.Helper()
	s, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: b.TempDir()})
	require.NoError(b, err)
	b.Cleanup(s.Close)
	return s
}

func indexAnchor(ctx context.Context, s *sqlitestore.Store, ops []store.DIDOperation) error {
	return s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		return tx.DIDOperationInsertMany(ctx, ops)
	})
}

// BenchmarkIndexAnchor measures the observer's index transaction — one full batch of creates —
// on an index that already holds `held` operations: the time it holds SQLite's write lock, which
// every operation queue commit waits for. Run with -benchtime 5x or more.
func BenchmarkIndexAnchor(b *testing.B) {
	for _, held := range []int{0, 200_000, 500_000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			ctx := context.Background()
			s := openBench(b)
			seq := int64(0)
			for ; seq < int64(held/benchAnchorOps); seq++ {
				require.NoError(b, indexAnchor(ctx, s, benchOps(seq+1)))
			}
			batches := make([][]store.DIDOperation, b.N)
			for i := range batches {
				batches[i] = benchOps(seq + int64(i) + 1)
			}
			b.ResetTimer()
			for i := range b.N {
				require.NoError(b, indexAnchor(ctx, s, batches[i]))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/anchor")
		})
	}
}

// BenchmarkQueueCommitsBesideIndex measures what intake sees: small write transactions (the
// operation queue's group commits of 64 rows) issued back to back while the observer indexes
// full batches. It reports the commits' p99 latency and how many rows per second they wrote.
func BenchmarkQueueCommitsBesideIndex(b *testing.B) {
	ctx := context.Background()
	s := openBench(b)
	const held = 200_000
	seq := int64(0)
	for ; seq < held/benchAnchorOps; seq++ {
		require.NoError(b, indexAnchor(ctx, s, benchOps(seq+1)))
	}
	batches := make([][]store.DIDOperation, b.N)
	for i := range batches {
		batches[i] = benchOps(seq + int64(i) + 1)
	}
	var (
		stop      atomic.Bool
		wg        sync.WaitGroup
		latencies []time.Duration
		rows      int
		next      int
	)
	wg.Go(func() {
		req := make([]byte, benchRequestSize)
		for !stop.Load() {
			params := make([]store.OpQueueInsertParams, 64)
			for i := range params {
				params[i] = store.OpQueueInsertParams{
					OpID: fmt.Sprintf("op-%d", next), Suffix: fmt.Sprintf("s-%d", next), Type: "create",
					Request: req, InstanceID: "bench", Lifespan: time.Hour,
				}
				next++
			}
			start := time.Now()
			err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				_, err := tx.OpQueueUpsertMany(ctx, params)
				return err
			})
			if err != nil {
				b.Error(err)
				return
			}
			latencies = append(latencies, time.Since(start))
			rows += len(params)
		}
	})
	b.ResetTimer()
	for i := range b.N {
		require.NoError(b, indexAnchor(ctx, s, batches[i]))
		time.Sleep(100 * time.Millisecond) // the gap between anchors, when only intake writes
	}
	stop.Store(true)
	wg.Wait()
	b.StopTimer()
	if len(latencies) == 0 {
		b.Fatal("no queue commit ran")
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Microseconds())/1000, "p99-commit-ms")
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "queued-rows/s")
}

// BenchmarkQueueCommit is one of intake's group commits: 32 operations (the average group at
// concurrency 64) into a queue that holds 10,000, in one transaction.
func BenchmarkQueueCommit(b *testing.B) {
	ctx := context.Background()
	s := openBench(b)
	req := make([]byte, benchRequestSize)
	next := 0
	group := func(n int) []store.OpQueueInsertParams {
		params := make([]store.OpQueueInsertParams, n)
		for i := range params {
			params[i] = store.OpQueueInsertParams{
				OpID: fmt.Sprintf("op-%d", next), Suffix: fmt.Sprintf("s-%d", next), Type: "create",
				Request: req, InstanceID: "bench", Lifespan: time.Hour,
			}
			next++
		}
		return params
	}
	commit := func(params []store.OpQueueInsertParams) {
		err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			ids, err := tx.OpQueueUpsertMany(ctx, params)
			if err == nil && len(ids) != len(params) {
				err = fmt.Errorf("%d ids for %d operations", len(ids), len(params))
			}
			return err
		})
		require.NoError(b, err)
	}
	for range 10_000 / 1_000 {
		commit(group(1_000))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		commit(group(32))
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/32, "us/operation")
}
