package amqppubsub

import (
	"context"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/pubsub"
)

// TestPublishReturnsWhenBrokerStopsAnswering: a broker that keeps its connections open but
// stops reading them (RabbitMQ does so to publishing connections under a memory or disk alarm;
// a wedged node does it to all) makes Publish fail with ErrUnavailable once its context ends,
// and Check and Close return, instead of waiting for an answer that does not come.
func TestPublishReturnsWhenBrokerStopsAnswering(t *testing.T) {
	t.Parallel()
	proxy := newStallProxy(t, anchordtest.AMQPURL(t))
	cfg := Config{
		URL:         proxy.url,
		Prefix:      testPrefix(t),
		DialTimeout: time.Second, // also what Close gives the broker to answer
		Logger:      anchordtest.Logger(t),
		Registerer:  prometheus.NewRegistry(),
	}
	removeOnCleanup(t, Config{URL: anchordtest.AMQPURL(t), Prefix: cfg.Prefix})
	ctx := anchordtest.Context(t, time.Minute)
	ps, err := New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ps.Close()) })
	t.Cleanup(proxy.close) // first: it ends whatever a failed run left waiting on the broker
	// One publish leaves a channel in the pool; the next ones run on it and on new channels.
	require.NoError(t, ps.Publish(ctx, pubsub.TopicAnchor, &pubsub.Message{Body: []byte("before")}))

	proxy.stall()
	const callTimeout = 300 * time.Millisecond
	returns := func(op func(ctx context.Context) error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			callCtx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			done <- op(callCtx)
		}()
		return anchordtest.WaitOrTimeout(t, done, waitTimeoutTest)
	}
	publish := func(ctx context.Context) error {
		return ps.Publish(ctx, pubsub.TopicAnchor, &pubsub.Message{Body: []byte("stalled")})
	}
	// The first runs on the pooled channel and has to close it; the second opens one.
	require.ErrorIs(t, returns(publish), pubsub.ErrUnavailable, "publish on the pooled channel")
	require.ErrorIs(t, returns(publish), pubsub.ErrUnavailable, "publish on a new channel")
	// Check sees an open connection, so its answer is not the point: that it comes is.
	_ = returns(ps.Check)
	closed := make(chan error, 1)
	go func() { closed <- ps.Close() }()
	require.NoError(t, anchordtest.WaitOrTimeout(t, closed, waitTimeoutTest))
}

// stallProxy forwards TCP connections to the broker of an AMQP URL. After stall it drops what
// clients send, while the broker's frames (heartbeats included) still reach them.
type stallProxy struct {
	url    string
	target string
	ln     net.Listener
	done   chan struct{}

	mu      sync.Mutex
	stalled bool
	conns   []net.Conn
	wg      sync.WaitGroup
	once    sync.Once
}

func newStallProxy(tb testing.TB, amqpURL string) *stallProxy {
	tb.Helper()
	u, err := url.Parse(amqpURL)
	require.NoError(tb, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	p := &stallProxy{target: u.Host, ln: ln, done: make(chan struct{})}
	u.Host = ln.Addr().String()
	p.url = u.String()
	p.wg.Go(p.accept)
	return p
}

func (p *stallProxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		broker, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, broker)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(broker, client, true) })
		p.wg.Go(func() { p.pipe(client, broker, false) })
	}
}

// pipe copies src to dst; from the client, only until the proxy stalls.
func (p *stallProxy) pipe(dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && fromClient && p.isStalled() {
			<-p.done
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			_ = dst.Close()
			return
		}
	}
}

func (p *stallProxy) isStalled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

func (p *stallProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// close ends every proxied connection and waits for the copies.
func (p *stallProxy) close() {
	p.once.Do(func() {
		close(p.done)
		_ = p.ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
}
