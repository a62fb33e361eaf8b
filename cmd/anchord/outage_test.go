package main

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/servicetest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store/storetest"
)

// outageClient posts creates in a loop and records which were accepted (200) and which got a
// 503 (refused, not accepted) or no answer.
type outageClient struct {
	c        *crashClient
	mu       sync.Mutex
	codes    map[int]int
	retryHdr bool
}

func (o *outageClient) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				id, req, err := o.c.wallet.Create()
				if err != nil {
					o.c.t.Errorf("create: %v", err)
					return
				}
				resp, err := o.c.api().http.Post(o.c.api().base+"/sidetree/v1/operations", "application/json", bytesReader(req))
				o.mu.Lock()
				if err != nil {
					o.codes[0]++
					o.c.unknown[opKey{"create", id.Suffix, ""}] = true
					o.mu.Unlock()
					continue
				}
				o.codes[resp.StatusCode]++
				if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" {
					o.retryHdr = true
				}
				if resp.StatusCode == http.StatusOK {
					o.c.accepted[opKey{"create", id.Suffix, ""}]++
				}
				o.mu.Unlock()
				resp.Body.Close()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// checkAllAnchored waits until every accepted create is anchored and resolvable, then checks
// that no operation is anchored twice.
func checkAllAnchored(t *testing.T, api *apiClient, accepted map[opKey]int) {
	t.Helper()
	keys := make([]opKey, 0, len(accepted))
	for k := range accepted {
		keys = append(keys, k)
	}
	if never := eventuallyEach(keys, 8, time.Minute, 50*time.Millisecond, func(k opKey) bool {
		code, _, err := api.resolve("did:sidetree:" + k.suffix)
		return err == nil && code == http.StatusOK
	}); len(never) > 0 {
		t.Fatalf("%d of %d accepted creates never resolvable, the first %s", len(never), len(keys), never[0].suffix)
	}
	counts := map[opKey]int{}
	for _, op := range api.anchoredOperations(t, sidetree.DefaultProfile()) {
		counts[keyOf(t, op)]++
	}
	for k, n := range counts {
		require.Equal(t, 1, n, "%v anchored %d times", k, n)
	}
}

// TestBrokerOutageLosesNothing runs a cluster instance on a private RabbitMQ node and stops the
// broker under load: while it is down, /healthcheck reports it, operations are refused with 503
// and Retry-After (never accepted and lost); after it returns the instance reconnects on its own,
// and every operation accepted before, during or after is anchored exactly once.
func TestBrokerOutageLosesNothing(t *testing.T) {
	t.Parallel()
	mq := servicetest.StartRabbitMQ(t)
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--database-url", storetest.PostgresURL(t), "--mq-url", mq.URL(),
			"--batch-writer-timeout", "200ms"},
		Addr: addr,
	})
	p.WaitHealthy(60 * time.Second)
	c := newCrashClient(t)
	c.setServer(addr)
	o := &outageClient{c: c, codes: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { o.run(ctx, 8); close(done) }()

	time.Sleep(1 * time.Second)
	mq.StopApp()
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return p.Health() == http.StatusServiceUnavailable
	}, "healthcheck never reported the broker down")
	time.Sleep(2 * time.Second)
	mq.StartApp()
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return p.Health() == http.StatusOK
	}, "instance never reconnected")
	time.Sleep(time.Second)
	cancel()
	<-done

	o.mu.Lock()
	t.Logf("answers by status: %v; %d accepted", o.codes, len(c.accepted))
	require.Positive(t, o.codes[http.StatusServiceUnavailable], "some operations were refused during the outage")
	require.True(t, o.retryHdr, "503 carries Retry-After")
	require.Zero(t, o.codes[http.StatusInternalServerError])
	o.mu.Unlock()
	checkAllAnchored(t, newClient(addr), c.accepted)
}

// TestDatabaseRestartLosesNothing restarts a private PostgreSQL under a running instance (and,
// once, kills it): operations are refused while it is away, the instance recovers by itself,
// and every accepted operation is anchored exactly once.
func TestDatabaseRestartLosesNothing(t *testing.T) {
	t.Parallel()
	pg := servicetest.StartPostgres(t)
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--database-url", pg.URL(), "--batch-writer-timeout", "200ms"},
		Addr: addr,
	})
	p.WaitHealthy(60 * time.Second)
	c := newCrashClient(t)
	c.setServer(addr)
	o := &outageClient{c: c, codes: map[int]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { o.run(ctx, 8); close(done) }()

	for _, outage := range []func(){func() { pg.Stop(t) }, func() { pg.Kill(t) }} {
		time.Sleep(time.Second)
		outage()
		anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
			return p.Health() == http.StatusServiceUnavailable
		}, "healthcheck never reported the database down")
		time.Sleep(time.Second)
		pg.Start(t)
		anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
			return p.Health() == http.StatusOK
		}, "instance never recovered")
	}
	time.Sleep(time.Second)
	cancel()
	<-done
	require.False(t, p.Exited(), "the instance rides out database outages:\n%s", p.Log())

	o.mu.Lock()
	t.Logf("answers by status: %v; %d accepted", o.codes, len(c.accepted))
	require.Positive(t, o.codes[http.StatusServiceUnavailable], "some operations were refused during the outages")
	require.Zero(t, o.codes[http.StatusInternalServerError])
	o.mu.Unlock()
	checkAllAnchored(t, newClient(addr), c.accepted)
}

// TestBrokerKilledWhileOperationsWaitLosesNothing kills a private RabbitMQ node with SIGKILL while
// operations wait for a retry: batches that failed (their delay is kept in the op_queue rows)
// and operation messages whose consumer failed (they wait in the broker's delay tiers, which
// dead-letter at least once). After the node comes back, every accepted operation is anchored
// exactly once.
func TestBrokerKilledWhileOperationsWaitLosesNothing(t *testing.T) {
	t.Parallel()
	mq := servicetest.StartRabbitMQ(t)
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--database-url", storetest.PostgresURL(t), "--mq-url", mq.URL(),
			"--batch-writer-timeout", "200ms", "--mq-redelivery-initial-interval", "3s"},
		Env:  []string{"ANCHORD_FAILPOINTS=batch-fail=3,opqueue-consume-fail=40"},
		Addr: addr,
	})
	p.WaitHealthy(60 * time.Second)
	c := newCrashClient(t)
	c.setServer(addr)
	api := newClient(addr)
	for range 60 {
		id, req, err := c.wallet.Create()
		require.NoError(t, err)
		code, body, err := api.post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, string(body))
		c.accepted[opKey{"create", id.Suffix, ""}]++
	}
	anchordtest.Eventually(t, time.Minute, 50*time.Millisecond, func() bool {
		return api.metricTotal(t, "anchord_opqueue_nacked_total") > 0 &&
			api.metricTotal(t, "anchord_pubsub_redelivered_total") > api.metricTotal(t, "anchord_pubsub_nacked_total")/2
	}, "batches failed and operation messages wait for redelivery")
	t.Logf("before the kill: %v operations in failed batches, %v operation messages rejected",
		api.metricTotal(t, "anchord_opqueue_nacked_total"), api.metricTotal(t, "anchord_pubsub_nacked_total"))

	mq.Kill()
	mq.Start()
	checkAllAnchored(t, api, c.accepted)
	require.False(t, p.Exited(), "the instance rides out the broker's death:\n%s", p.Log())
}
