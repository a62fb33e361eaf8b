package batch

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/opqueue"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// benchBatch is a full batch (MAX_OPERATION_COUNT).
const benchBatch = 10_000

// benchHeld is how many operations are indexed before the measured batches.
const benchHeld = 200_000

// pathBench is the embedded write path as the daemon wires it (daemon.writePath): the
// operation queue, the batch writer storing its files in the database CAS inside the anchor
// transaction, the local anchor backend, the observer with the known-suffix filter, the
// resolver's cache and index slices, and the store's background WAL checkpointer.
type pathBench struct {
	st     store.Store
	q      *opqueue.Queue
	w      *Writer
	obs    *observer.Observer
	keys   []*wallet.Key
	next   int64
	handed bool
}

func newPathBench(b *testing.B) *pathBench {
	b.Helper()
	ctx := context.Background()
	logger := anchordtest.DiscardLogger()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{DataDir: b.TempDir(), CheckpointInterval: sqlitestore.CheckpointIntervalDefault, Logger: logger})
	require.NoError(b, err)
	cctx, ccancel := context.WithCancel(ctx)
	cdone := make(chan error, 1)
	go func() { cdone <- st.Checkpointer().Run(cctx) }()
	b.Cleanup(func() { ccancel(); <-cdone; st.Close() })
	p := &pathBench{st: st}
	q, err := opqueue.New(opqueue.Config{InstanceID: "local", MaxBacklog: 4 * benchBatch, Logger: logger}, p.st)
	require.NoError(b, err)
	p.q = q
	qctx, qcancel := context.WithCancel(ctx)
	qdone := make(chan error, 1)
	go func() { qdone <- q.Run(qctx) }()
	b.Cleanup(func() { qcancel(); <-qdone })

	cs, err := cas.NewStore(cas.StoreConfig{}, p.st)
	require.NoError(b, err)
	key, err := anchor.LoadOrCreateDomainKey(ctx, p.st)
	require.NoError(b, err)
	aw, err := anchor.NewWriter(anchor.Config{}, anchor.NewLocal(key))
	require.NoError(b, err)
	profile := sidetree.DefaultProfile()
	known := observer.NewKnown()
	p.obs, err = observer.New(observer.Config{
		Profile: profile, Known: known, Resolver: observer.NewResolver(profile, p.st, known, 0),
		IndexTxRows: observer.IndexTxRowsOneWriter, Logger: logger,
	}, p.st, cs.FetchFunc)
	require.NoError(b, err)
	p.w, err = New(Config{
		MaxOperationCount: benchBatch, Profile: profile, Logger: logger,
		AnchoredFunc: func(a store.Anchor, ops []sidetree.AnchoredOperation) {
			if p.handed {
				p.obs.Anchored(a, ops)
			}
		},
	}, q, cs, aw, p.st)
	require.NoError(b, err)
	// The load generator's creates: keys drawn from a small pool, a distinct service endpoint
	// each, so that suffixes are distinct and requests are of its size.
	w := wallet.New(wallet.Config{})
	for range 16 {
		k, err := w.NewKey()
		require.NoError(b, err)
		p.keys = append(p.keys, k)
	}
	return p
}

// queue adds a batch of fresh creates to the queue, parsed as intake parses them.
func (p *pathBench) queue(b *testing.B) {
	b.Helper()
	ops := make([]opqueue.NewOp, benchBatch)
	for i := range ops {
		p.next++
		upd, rec := p.keys[p.next%16], p.keys[(p.next+1+p.next/16%15)%16]
		doc := wallet.Document{
			PublicKeys: []wallet.PublicKey{wallet.DocumentKey("key-1", upd, "authentication")},
			Services:   []wallet.Service{{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com/" + strconv.FormatInt(p.next, 36)}},
		}
		req, suffix, err := wallet.CreateRequest(rec.Commitment(), upd.Commitment(), wallet.Replace(doc))
		require.NoError(b, err)
		op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
		require.NoError(b, err)
		ops[i] = opqueue.NewOp{Suffix: suffix, Type: "create", Request: op.Request, Parsed: op}
	}
	require.NoError(b, p.q.Take(context.Background(), ops...))
}

// anchorAndObserve runs the measured path once: cut, build, store and anchor the queued batch,
// then index it. It returns the writer's and the observer's wall time.
func (p *pathBench) anchorAndObserve(b *testing.B) (time.Duration, time.Duration) {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	res, err := p.w.runOnce(ctx, "size")
	require.NoError(b, err)
	require.Equal(b, benchBatch, res.Operations)
	wrote := time.Now()
	n, err := p.obs.CatchUp(ctx)
	require.NoError(b, err)
	require.Equal(b, 1, n)
	return wrote.Sub(start), time.Since(wrote)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWritePath measures one batch of 10,000 creates through the embedded write path —
// the batch writer cutting it, building the four Sidetree files, storing them in CAS with the
// anchor in one transaction, then the observer indexing it — with 200,000 operations already
// indexed. "handoff" is the embedded daemon (the writer hands its batch to the observer);
// "files" is the observer reading the batch back from CAS, as for an anchor it did not write
// or after a restart. It reports the process's CPU time per batch (all goroutines, including
// SQLite's work) and the wall time of each half, which is about how long each holds SQLite's
// write connection. Run with -benchtime 5x.
func BenchmarkWritePath(b *testing.B) {
	for _, mode := range []string{"handoff", "files"} {
		b.Run(fmt.Sprintf("held=%d/%s", benchHeld, mode), func(b *testing.B) {
			p := newPathBench(b)
			p.handed = true
			for range benchHeld / benchBatch {
				p.queue(b)
				p.anchorAndObserve(b)
			}
			p.handed = mode == "handoff"
			var cpu, writer, obs time.Duration
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				p.queue(b)
				b.StartTimer()
				c0 := cpuTime()
				w, o := p.anchorAndObserve(b)
				cpu += cpuTime() - c0
				writer += w
				obs += o
			}
			n := float64(b.N)
			b.ReportMetric(float64(cpu.Microseconds())/1000/n, "cpu-ms/batch")
			b.ReportMetric(float64(writer.Microseconds())/1000/n, "writer-ms")
			b.ReportMetric(float64(obs.Microseconds())/1000/n, "observer-ms")
		})
	}
}
