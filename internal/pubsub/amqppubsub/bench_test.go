package amqppubsub

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
)

// The benchmarks compare anchord's publisher and subscriber with bare amqp091-go doing the same
// work in the same run: one confirmed 1 KB message per call, one call in flight per channel,
// `pool` channels. Run them with a fixed count, for example
//
//	go test -run '^$' -bench . -benchtime 3000x ./internal/pubsub/amqppubsub/
//
// and compare the msg/s of anchord and bare within one line pair; absolute figures depend on
// the disk and on what else the machine is doing.

var benchPools = []int{1, 8, 25}

// benchEnv is one queue type's topology, shared by its sub-benchmarks.
type benchEnv struct {
	ps    *PubSub
	conn  *amqp.Connection
	queue string
	body  []byte
}

func newBenchEnv(b *testing.B, qt QueueType, slots int) *benchEnv {
	b.Helper()
	url := anchordtest.AMQPURL(b)
	cfg := Config{
		URL:                    url,
		Prefix:                 testPrefix(b),
		QueueType:              qt,
		SubscriberChannelSlots: slots,
		Logger:                 anchordtest.DiscardLogger(),
	}
	removeOnCleanup(b, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ps, err := New(ctx, cfg)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, ps.Close()) })
	conn, err := amqp.Dial(url)
	require.NoError(b, err)
	b.Cleanup(func() { _ = conn.Close() })
	return &benchEnv{ps: ps, conn: conn, queue: ps.topo.queues[pubsub.TopicOperation], body: make([]byte, 1024)}
}

func (e *benchEnv) purge(b *testing.B) {
	b.Helper()
	ch, err := e.conn.Channel()
	require.NoError(b, err)
	defer ch.Close()
	_, err = ch.QueuePurge(e.queue, false)
	require.NoError(b, err)
}

// spread runs fn(i) for i in [0, n) on pool goroutines.
func spread(n, pool int, fn func(worker, i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, pool)
	for w := range pool {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := fn(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// anchordPublish publishes n messages through PubSub.Publish from pool goroutines.
func (e *benchEnv) anchordPublish(ctx context.Context, n, pool int) error {
	return spread(n, pool, func(_, _ int) error {
		return e.ps.Publish(ctx, pubsub.TopicOperation, &pubsub.Message{Body: e.body})
	})
}

// barePublish publishes n messages with bare amqp091-go: pool channels in confirm mode,
// persistent and mandatory, waiting for each confirm.
func (e *benchEnv) barePublish(ctx context.Context, n, pool int) error {
	chans := make([]*amqp.Channel, pool)
	for i := range chans {
		ch, err := e.conn.Channel()
		if err != nil {
			return err
		}
		defer ch.Close()
		if err := ch.Confirm(false); err != nil {
			return err
		}
		chans[i] = ch
	}
	return spread(n, pool, func(w, _ int) error {
		dc, err := chans[w].PublishWithDeferredConfirmWithContext(ctx, e.ps.topo.exchange, e.queue, true, false, amqp.Publishing{
			DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", MessageId: newID(), Body: e.body,
		})
		if err != nil {
			return err
		}
		ok, err := dc.WaitContext(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("nacked")
		}
		return nil
	})
}

func reportRate(b *testing.B, n int, d time.Duration) {
	b.ReportMetric(float64(n)/d.Seconds(), "msg/s")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkPublish(b *testing.B) {
	for _, qt := range []QueueType{QueueClassic, QueueQuorum} {
		b.Run(string(qt), func(b *testing.B) {
			env := newBenchEnv(b, qt, SubscriberChannelSlotsDefault)
			for _, pool := range benchPools {
				for _, impl := range []string{"anchord", "bare"} {
					b.Run(fmt.Sprintf("pool=%d/%s", pool, impl), func(b *testing.B) {
						ctx := context.Background()
						start := time.Now()
						var err error
						if impl == "anchord" {
							err = env.anchordPublish(ctx, b.N, pool)
						} else {
							err = env.barePublish(ctx, b.N, pool)
						}
						elapsed := time.Since(start)
						require.NoError(b, err)
						reportRate(b, b.N, elapsed)
						b.StopTimer()
						env.purge(b)
					})
				}
			}
		})
	}
}

// BenchmarkEndToEnd publishes n messages and consumes them with a pool of the same size; the
// clock stops when the last one was handled (anchord acks it, bare acks it by hand).
func BenchmarkEndToEnd(b *testing.B) {
	for _, qt := range []QueueType{QueueClassic, QueueQuorum} {
		b.Run(string(qt), func(b *testing.B) {
			env := newBenchEnv(b, qt, SubscriberChannelSlotsDefault)
			for _, pool := range benchPools {
				for _, impl := range []string{"anchord", "bare"} {
					b.Run(fmt.Sprintf("pool=%d/%s", pool, impl), func(b *testing.B) {
						benchEndToEnd(b, env, pool, impl)
					})
				}
			}
		})
	}
}

// BenchmarkSubscriberLayout compares a channel per pool slot (prefetch 1 each) with one channel
// shared by the whole pool (prefetch = pool), end to end on classic queues.
func BenchmarkSubscriberLayout(b *testing.B) {
	for _, pool := range []int{8, 25} {
		for _, layout := range []struct {
			name  string
			slots int
		}{{"channel-per-slot", 1}, {"shared-channel", pool}} {
			b.Run(fmt.Sprintf("pool=%d/%s", pool, layout.name), func(b *testing.B) {
				env := newBenchEnv(b, QueueClassic, layout.slots)
				benchEndToEnd(b, env, pool, "anchord")
			})
		}
	}
}

func benchEndToEnd(b *testing.B, env *benchEnv, pool int, impl string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var handled atomic.Int64
	done := make(chan struct{})
	count := func() {
		if handled.Add(1) == int64(b.N) {
			close(done)
		}
	}
	var consumers sync.WaitGroup
	start := time.Now()
	if impl == "anchord" {
		consumers.Go(func() {
			_ = env.ps.Subscribe(ctx, pubsub.TopicOperation, pool, func(context.Context, *pubsub.Message) error {
				count()
				return nil
			})
		})
		require.NoError(b, env.anchordPublish(ctx, b.N, pool))
	} else {
		for range pool {
			ch, err := env.conn.Channel()
			require.NoError(b, err)
			defer ch.Close()
			require.NoError(b, ch.Qos(1, 0, false))
			deliveries, err := ch.Consume(env.queue, "", false, false, false, false, nil)
			require.NoError(b, err)
			consumers.Go(func() {
				for {
					select {
					case <-ctx.Done():
						return
					case d, ok := <-deliveries:
						if !ok {
							return
						}
						_ = d.Ack(false)
						count()
					}
				}
			})
		}
		require.NoError(b, env.barePublish(ctx, b.N, pool))
	}
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d handled", handled.Load(), b.N)
	}
	reportRate(b, b.N, time.Since(start))
	b.StopTimer()
	cancel()
	consumers.Wait()
}
