package daemon

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// recorder notes the order in which components observed their stop.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	r.order = append(r.order, s)
	r.mu.Unlock()
}

func blockUntilDone(r *recorder, name string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		<-ctx.Done()
		r.note(name)
		return nil
	}
}

func TestSupervisorStopsStagesInOrder(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	s := &supervisor{logger: anchordtest.Logger(t), timeout: 5 * time.Second}
	// Registered out of order on purpose: the stage, not registration, decides.
	s.add(StageWriters, "batch-writer", blockUntilDone(rec, "writers"))
	s.add(StageHTTP, "http", blockUntilDone(rec, "http"))
	s.add(StageConsumers, "opqueue", blockUntilDone(rec, "consumers"))
	s.onStop(StageDatabase, "store", func() { rec.note("database") })
	s.onStop(StageBroker, "pubsub", func() { rec.note("broker") })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
	require.Equal(t, []string{"http", "consumers", "writers", "broker", "database"}, rec.order)
}

func TestSupervisorLaterStageRunsUntilEarlierStopped(t *testing.T) {
	t.Parallel()
	s := &supervisor{logger: anchordtest.Logger(t), timeout: 5 * time.Second}
	httpStopped := make(chan struct{})
	writerSawHTTPStopped := make(chan bool, 1)
	s.add(StageHTTP, "http", func(ctx context.Context) error {
		<-ctx.Done()
		time.Sleep(50 * time.Millisecond) // a slow drain of in-flight requests
		close(httpStopped)
		return nil
	})
	s.add(StageWriters, "writer", func(ctx context.Context) error {
		<-ctx.Done()
		select {
		case <-httpStopped:
			writerSawHTTPStopped <- true
		default:
			writerSawHTTPStopped <- false
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	cancel()
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second))
	require.True(t, <-writerSawHTTPStopped, "the writer stage is cancelled only after http has stopped")
}

func TestSupervisorFailureStopsEverything(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	s := &supervisor{logger: anchordtest.Logger(t), timeout: 5 * time.Second}
	boom := errors.New("boom")
	s.add(StageHTTP, "http", blockUntilDone(rec, "http"))
	s.add(StageWriters, "writer", func(context.Context) error { return boom })
	s.onStop(StageDatabase, "store", func() { rec.note("database") })
	err := s.run(context.Background())
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "writer")
	require.Equal(t, []string{"http", "database"}, rec.order)
}

func TestSupervisorUnexpectedReturnIsAFailure(t *testing.T) {
	t.Parallel()
	s := &supervisor{logger: anchordtest.Logger(t), timeout: 5 * time.Second}
	s.add(StageConsumers, "observer", func(context.Context) error { return nil })
	require.ErrorContains(t, s.run(context.Background()), "observer stopped unexpectedly")
}
