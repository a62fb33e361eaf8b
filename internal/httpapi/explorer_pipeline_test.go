package httpapi

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// pipelineFunc stands in for the explorer's recorder.
type pipelineFunc func() (PipelineSample, []PipelineSample, time.Duration)

func (f pipelineFunc) Pipeline() (PipelineSample, []PipelineSample, time.Duration) { return f() }

type federationFunc func(ctx context.Context) (FederationView, error)

func (f federationFunc) Federation(ctx context.Context) (FederationView, error) { return f(ctx) }

func TestExplorerPipeline(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	b := explorerSetup(t, pipelineFunc(func() (PipelineSample, []PipelineSample, time.Duration) {
		return PipelineSample{At: at, Accepted: 12, Anchored: 10, QueueDepth: 2, OldestAgeSeconds: 0.5},
			[]PipelineSample{{At: at.Add(-2 * time.Second), Accepted: 4}, {At: at.Add(-time.Second), Accepted: 12, AcceptedPerSecond: 8}},
			time.Second
	}), nil)
	ctx := context.Background()
	for _, kind := range []string{store.DeadLetterOperation, store.DeadLetterOperation, store.DeadLetterMessage} {
		_, err := b.st.DeadLetterInsert(ctx, store.DeadLetter{Kind: kind, Ref: "r", Payload: []byte("p"), Reason: "x"})
		require.NoError(t, err)
	}

	var v PipelineView
	status, _ := b.getJSON(t, "/explorer/api/pipeline", &v)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 12.0, v.Now.Accepted)
	require.Equal(t, 2.0, v.Now.QueueDepth)
	require.True(t, at.Equal(v.Now.At))
	require.Len(t, v.History, 2)
	require.Equal(t, 8.0, v.History[1].AcceptedPerSecond)
	require.Equal(t, 1.0, v.IntervalSeconds)
	require.Equal(t, []BatchEntry{
		{Seq: b.anchor[1].Seq, OperationCount: 2, Status: store.AnchorCompleted, CreatedAt: b.anchor[1].CreatedAt},
		{Seq: b.anchor[0].Seq, OperationCount: 3, Status: store.AnchorCompleted, CreatedAt: b.anchor[0].CreatedAt},
	}, v.RecentBatches)
	require.Equal(t, map[string]int64{store.DeadLetterOperation: 2, store.DeadLetterMessage: 1}, v.DeadLetters)
}

func TestExplorerPipelineWithoutPipeline(t *testing.T) {
	t.Parallel()
	b := explorerSetup(t, nil, nil)
	var v PipelineView
	status, code := b.getJSON(t, "/explorer/api/pipeline", &v)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "not_found", code)
}

func TestExplorerFederation(t *testing.T) {
	t.Parallel()

	t.Run("not federated", func(t *testing.T) {
		t.Parallel()
		b := explorerSetup(t, nil, nil)
		status, body := get(t, b.base+"/explorer/api/federation")
		require.Equal(t, http.StatusOK, status)
		require.JSONEq(t, `{"enabled":false,"followers":[],"following":[],"witnesses":[],"witnessing":[]}`, string(body))
	})

	t.Run("federated", func(t *testing.T) {
		t.Parallel()
		since := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
		b := explorerSetup(t, nil, federationFunc(func(context.Context) (FederationView, error) {
			return FederationView{
				Enabled: true, Actor: "https://a.example/services/anchord",
				Followers: []FederationPeer{{
					Actor: "https://b.example/services/anchord", Since: &since,
					LastDelivery: &FederationDelivery{Activity: "Create", State: DeliveryRetrying, At: since, Attempts: 2, Error: "503"},
				}},
			}, nil
		}))
		var v FederationView
		b.getJSON(t, "/explorer/api/federation", &v)
		require.True(t, v.Enabled)
		require.Len(t, v.Followers, 1)
		require.Equal(t, DeliveryRetrying, v.Followers[0].LastDelivery.State)
		require.NotNil(t, v.Following, "empty lists are [] for the page")
		require.Empty(t, v.Witnesses)
	})

	t.Run("source failing", func(t *testing.T) {
		t.Parallel()
		b := explorerSetup(t, nil, federationFunc(func(context.Context) (FederationView, error) {
			return FederationView{}, errors.New("relationships table unreachable at 10.0.0.1")
		}))
		status, body := get(t, b.base+"/explorer/api/federation")
		require.Equal(t, http.StatusServiceUnavailable, status)
		require.NotContains(t, string(body), "10.0.0.1", "the cause is logged, not sent")
	})
}
