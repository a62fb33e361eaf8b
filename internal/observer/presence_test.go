package observer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// gatedIndex counts presence queries; while gate is set, each query first waits for it.
type gatedIndex struct {
	store.Executor
	queries atomic.Int32
	sizes   chan int
	gate    chan struct{}
	fail    atomic.Bool
}

func (g *gatedIndex) DIDLastAnchors(ctx context.Context, suffixes []string) (map[string]int64, error) {
	g.queries.Add(1)
	if g.sizes != nil {
		g.sizes <- len(suffixes)
	}
	if g.gate != nil {
		<-g.gate
	}
	if g.fail.Load() {
		return nil, errors.New("database unreachable")
	}
	return g.Executor.DIDLastAnchors(ctx, suffixes)
}

func TestCreateStateVersionAnswersAsStateVersion(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setup(t, st)
		ctx := context.Background()
		o := b.observer(t)

		var indexed, fresh []string
		var reqs [][]byte
		for range 5 {
			id, req, err := b.wallet.Create()
			require.NoError(t, err)
			indexed = append(indexed, id.Suffix)
			reqs = append(reqs, req)
			id, _, err = b.wallet.Create()
			require.NoError(t, err)
			fresh = append(fresh, id.Suffix)
		}
		b.anchorOps(t, reqs...)
		_, err := o.CatchUp(ctx)
		require.NoError(t, err)

		r := newTestResolver(sidetree.DefaultProfile(), st, nil, 0)
		var wg sync.WaitGroup
		for i := range 64 {
			suffix := append(indexed, fresh...)[i%10]
			wg.Go(func() {
				want, wantV, err := r.StateVersion(ctx, suffix)
				assert.NoError(t, err)
				got, gotV, err := r.CreateStateVersion(ctx, suffix)
				assert.NoError(t, err)
				assert.Equal(t, want == nil, got == nil, suffix)
				assert.Equal(t, wantV, gotV, suffix)
			})
		}
		wg.Wait()
	})
}

// An operation indexed before the question was asked is always seen, however the questions of
// concurrent callers are grouped: the cluster's create and resolution paths rely on it.
func TestPresenceSeesWhatWasIndexedBeforeTheQuestion(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	b := setup(t, st)
	ctx := context.Background()
	o := b.observer(t)
	r := newTestResolver(sidetree.DefaultProfile(), st, nil, 0)

	var asking sync.WaitGroup
	stop := make(chan struct{})
	for range 8 { // keeps rounds in flight while the DIDs below are indexed
		asking.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				id, _, err := b.wallet.Create()
				if !assert.NoError(t, err) {
					return
				}
				state, _, err := r.CreateStateVersion(ctx, id.Suffix)
				assert.NoError(t, err)
				assert.Nil(t, state)
				state, err = r.State(ctx, id.Suffix)
				assert.NoError(t, err)
				assert.Nil(t, state)
			}
		})
	}
	for range 10 {
		id, req, err := b.wallet.Create()
		require.NoError(t, err)
		b.anchorOps(t, req)
		_, err = o.CatchUp(ctx)
		require.NoError(t, err)
		state, _, err := r.CreateStateVersion(ctx, id.Suffix)
		require.NoError(t, err)
		require.NotNil(t, state, "indexed before the question")
		state, err = r.State(ctx, id.Suffix)
		require.NoError(t, err)
		require.NotNil(t, state, "indexed before the resolution")
	}
	close(stop)
	asking.Wait()
}

func TestPresenceGroupsWaitingQuestions(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	g := &gatedIndex{Executor: st, sizes: make(chan int, 10), gate: make(chan struct{})}
	p := newPresence(g)
	ctx := context.Background()

	// The first question's round is held; the ones asked meanwhile wait for the next round,
	// which asks for all of them at once.
	const waiting = 20
	var wg sync.WaitGroup
	wg.Go(func() {
		found, err := p.has(ctx, "first")
		assert.NoError(t, err)
		assert.False(t, found)
	})
	require.Equal(t, 1, anchordtest.WaitOrTimeout(t, g.sizes, 5*time.Second))
	for i := range waiting {
		wg.Go(func() {
			found, err := p.has(ctx, fmt.Sprintf("later%d", i%(waiting/2))) // each suffix asked twice
			assert.NoError(t, err)
			assert.False(t, found)
		})
	}
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.next) == waiting
	}, 5*time.Second, time.Millisecond)
	close(g.gate)
	require.Equal(t, waiting/2, anchordtest.WaitOrTimeout(t, g.sizes, 5*time.Second), "each suffix once")
	wg.Wait()
	require.EqualValues(t, 2, g.queries.Load())

	// Nothing in flight: the next question runs its own round at once.
	found, err := p.has(ctx, "alone")
	require.NoError(t, err)
	require.False(t, found)
	require.Equal(t, 1, anchordtest.WaitOrTimeout(t, g.sizes, 5*time.Second))
}

func TestPresenceFailureFailsOnlyItsRound(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	g := &gatedIndex{Executor: st}
	r := newTestResolver(sidetree.DefaultProfile(), g, nil, 0)
	ctx := context.Background()

	g.fail.Store(true)
	_, _, err := r.CreateStateVersion(ctx, "EiAnything")
	require.ErrorContains(t, err, "database unreachable")
	g.fail.Store(false)
	state, version, err := r.CreateStateVersion(ctx, "EiAnything")
	require.NoError(t, err)
	require.Nil(t, state)
	require.Zero(t, version)
}

// panickyIndex panics in the first presence query, as a store bug or a driver fault might.
type panickyIndex struct {
	store.Executor
	calls atomic.Int32
}

func (p *panickyIndex) DIDLastAnchors(ctx context.Context, suffixes []string) (map[string]int64, error) {
	if p.calls.Add(1) == 1 {
		panic("driver fault")
	}
	return p.Executor.DIDLastAnchors(ctx, suffixes)
}

// A round that panics (the HTTP server recovers it into one 500) must not leave presence stuck:
// every later create would wait forever.
func TestPresenceSurvivesAPanickingRound(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	p := newPresence(&panickyIndex{Executor: st})
	ctx := context.Background()
	func() {
		defer func() { require.NotNil(t, recover()) }()
		_, _ = p.has(ctx, "first")
	}()
	done := make(chan error, 1)
	go func() {
		_, err := p.has(ctx, "later")
		done <- err
	}()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 5*time.Second))
}
