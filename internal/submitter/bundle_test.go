package submitter

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/devledger/devledgertest"
	"github.com/anchord/anchord/internal/ledger"
	"github.com/anchord/anchord/internal/ledger/sawtooth"
	"github.com/anchord/anchord/internal/store"
)

// testBundle is a store, a development ledger, a client for it and an anchor writer using the
// ledger backend.
type testBundle struct {
	st      store.Store
	ledger  *devledgertest.Ledger
	client  *sawtooth.Client
	writer  *anchor.Writer
	requeue *requeueRecorder
}

// setup starts a devledger with cfg (its clock is fake: nothing commits until the test
// advances it) and a client whose requests time out after clientTimeout.
func setup(t *testing.T, st store.Store, cfg devledger.Config, clientTimeout time.Duration) *testBundle {
	t.Helper()
	l := devledgertest.Start(t, cfg)
	client, err := sawtooth.New(sawtooth.Config{URL: l.URL, Timeout: clientTimeout})
	require.NoError(t, err)
	t.Cleanup(client.CloseIdleConnections)
	return &testBundle{st: st, ledger: l, client: client, writer: newLedgerWriter(t, st), requeue: &requeueRecorder{}}
}

func newLedgerWriter(t testing.TB, st store.Store) *anchor.Writer {
	t.Helper()
	key, err := anchor.LoadOrCreateLedgerKey(context.Background(), st)
	require.NoError(t, err)
	signer, err := sawtooth.NewSigner(key)
	require.NoError(t, err)
	builder, err := sawtooth.NewBuilder(signer, sawtooth.BuilderConfig{})
	require.NoError(t, err)
	backend, err := anchor.NewLedger(builder, anchor.LedgerConfig{})
	require.NoError(t, err)
	w, err := anchor.NewWriter(anchor.Config{}, backend)
	require.NoError(t, err)
	return w
}

// recordAnchors records n ledger anchors, perTx to a transaction, and returns them.
func recordAnchors(st store.Store, w *anchor.Writer, prefix string, n, perTx int) ([]store.Anchor, error) {
	out := make([]store.Anchor, 0, n)
	for start := 0; start < n; start += perTx {
		err := st.InTx(context.Background(), func(ctx context.Context, tx store.Executor) error {
			for i := start; i < min(start+perTx, n); i++ {
				cid := fmt.Sprintf("Qm%s%06d", prefix, i)
				a, err := w.Write(ctx, tx, anchor.Request{AnchorString: "1." + cid, CoreIndexCID: cid, OpCount: 1,
					Ops: []anchor.OpRef{{Suffix: "Ei" + cid, Type: "create"}}})
				if err != nil {
					return err
				}
				out = append(out, a)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func writeAnchors(t testing.TB, st store.Store, w *anchor.Writer, prefix string, n, perTx int) []store.Anchor {
	t.Helper()
	as, err := recordAnchors(st, w, prefix, n, perTx)
	require.NoError(t, err)
	return as
}

func (b *testBundle) anchors(t *testing.T, n int) []store.Anchor {
	t.Helper()
	return writeAnchors(t, b.st, b.writer, "T", n, 50)
}

// submitter returns a Submitter on the bundle's store and client with short test timings;
// edit lets a test change its config.
func (b *testBundle) submitter(t *testing.T, owner string, client ledger.Client, edit func(*Config)) *Submitter {
	t.Helper()
	cfg := Config{
		InstanceID: owner, RequeueFunc: b.requeue.Func, ClaimTTL: 10 * time.Second, RequestTimeout: 2 * time.Second,
		Interval: 20 * time.Millisecond, BackoffInitial: time.Hour, BackoffMax: time.Hour,
		Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry(),
	}
	if edit != nil {
		edit(&cfg)
	}
	if client == nil {
		client = b.client
	}
	s, err := New(cfg, b.st, client)
	require.NoError(t, err)
	return s
}

func (b *testBundle) poller(t *testing.T, client ledger.Client, edit func(*PollerConfig)) *Poller {
	t.Helper()
	cfg := PollerConfig{RequeueFunc: b.requeue.Func, Interval: 20 * time.Millisecond, RequestTimeout: 2 * time.Second,
		Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry()}
	if edit != nil {
		edit(&cfg)
	}
	if client == nil {
		client = b.client
	}
	p, err := NewPoller(cfg, b.st, client)
	require.NoError(t, err)
	return p
}

func (b *testBundle) batchOf(t testing.TB, a store.Anchor) store.LedgerBatch {
	t.Helper()
	batch, err := b.st.LedgerBatchGetByAnchor(context.Background(), a.Seq)
	require.NoError(t, err)
	return batch
}

func (b *testBundle) anchor(t *testing.T, seq int64) store.Anchor {
	t.Helper()
	a, err := b.st.AnchorGet(context.Background(), seq)
	require.NoError(t, err)
	return a
}

func (b *testBundle) counts(t testing.TB) store.LedgerBatchCounts {
	t.Helper()
	c, err := b.st.LedgerBatchCount(context.Background())
	require.NoError(t, err)
	return c
}

// requeueRecorder is the RequeueFunc of tests. It records each anchor it is given and writes
// a marker setting in the caller's transaction, so that a requeue is visible exactly when the
// anchor's failure committed, and a second requeue of one anchor fails (ErrConflict).
type requeueRecorder struct {
	mu      sync.Mutex
	anchors []store.Anchor
}

func requeueSetting(seq int64) string { return "test_requeued_" + strconv.FormatInt(seq, 10) }

func (r *requeueRecorder) Func(ctx context.Context, tx store.Executor, a store.Anchor) error {
	if err := tx.SettingInsert(ctx, requeueSetting(a.Seq), []byte(a.Error)); err != nil {
		return fmt.Errorf("record requeue of anchor %d: %w", a.Seq, err)
	}
	r.mu.Lock()
	r.anchors = append(r.anchors, a)
	r.mu.Unlock()
	return nil
}

// requeued reports whether the anchor's operations were given back (committed).
func requeued(t testing.TB, st store.Executor, seq int64) bool {
	t.Helper()
	_, err := st.SettingGet(context.Background(), requeueSetting(seq))
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}
