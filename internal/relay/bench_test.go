package relay

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// BenchmarkPublishLargeAnchor measures building the Create of one anchor of 10,000 creates:
// reading its batch back (or not, when the observer handed its DIDs over), the previous anchors
// of its DIDs, laying out the link and signing the credential.
func BenchmarkPublishLargeAnchor(b *testing.B) {
	d := newDomain(b, newNetwork(), "a", sqlite(b))
	anchorCreates(b, d, 10_000)
	ctx := context.Background()
	next, err := d.st.AnchorNextToPublish(ctx)
	require.NoError(b, err)
	suffixes, err := d.pub.suffixes(ctx, next)
	require.NoError(b, err)
	for _, handed := range []bool{false, true} {
		b.Run(map[bool]string{false: "read back", true: "handed over"}[handed], func(b *testing.B) {
			for b.Loop() {
				if handed {
					d.pub.Indexed(next.Seq, suffixes)
				}
				_, _, _, err := d.pub.build(ctx, next)
				require.NoError(b, err)
			}
		})
	}
}

// BenchmarkPublishTransaction measures how long the publish transaction of one anchor of
// 10,000 creates holds the database (on SQLite, the write lock every other commit waits for):
// from its first statement to its last, the commit aside, with the daemon's outbox and three
// followers. Each turn rolls back, so the same anchor is published at every turn; tx-µs/op
// is the transaction's share of the turn (ns/op), the rest being the Create built and laid out
// before it.
func BenchmarkPublishTransaction(b *testing.B) {
	for _, backend := range storetest.Backends {
		b.Run(backend, func(b *testing.B) {
			n := newNetwork()
			d := newDomain(b, n, "a", storetest.Open(b, storetest.OpenerFor(b, backend)))
			ctx := context.Background()
			for _, f := range []string{"https://f1.example/services/anchord", "https://f2.example/services/anchord", "https://f3.example/services/anchord"} {
				require.NoError(b, d.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: f, Status: store.RelationshipAccepted}))
			}
			anchorCreates(b, d, 10_000)
			next, err := d.st.AnchorNextToPublish(ctx)
			require.NoError(b, err)
			suffixes, err := d.pub.suffixes(ctx, next)
			require.NoError(b, err)
			st := &rolledBackStore{Store: d.st}
			_, prepare := d.federationOutbox()
			pub, err := NewPublisher(Config{Identity: d.id, Profile: d.profile, Limits: d.limits, Logger: anchordtest.Logger(b)}, st, d.cas, prepare)
			require.NoError(b, err)
			for b.Loop() {
				pub.Indexed(next.Seq, suffixes)
				_, err := pub.runOnce(ctx)
				require.ErrorIs(b, err, errRolledBack)
			}
			b.ReportMetric(float64(st.held.Microseconds())/float64(st.turns), "tx-µs/op")
		})
	}
}

var errRolledBack = errors.New("rolled back")

// rolledBackStore times the work of each transaction it runs, from the first statement to the
// last, and rolls the transaction back.
type rolledBackStore struct {
	store.Store
	held  time.Duration
	turns int
}

func (s *rolledBackStore) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Executor) error) error {
	return s.Store.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		start := time.Now()
		if err := fn(ctx, tx); err != nil {
			return err
		}
		s.held += time.Since(start)
		s.turns++
		return errRolledBack
	})
}

// anchorCreates anchors one batch of n creates at d.
func anchorCreates(b *testing.B, d *domain, n int) {
	b.Helper()
	w := wallet.New(wallet.Config{})
	reqs := make([][]byte, n)
	for i := range reqs {
		_, req, err := w.Create()
		require.NoError(b, err)
		reqs[i] = req
	}
	d.anchorOps(reqs...)
}
