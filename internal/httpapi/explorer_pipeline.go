package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// PipelineSample is the pipeline of this instance at one moment: its counters, and the rates
// over the interval that ends at At.
type PipelineSample struct {
	At time.Time `json:"at"`
	// Accepted counts operations accepted by intake; Anchored counts operations removed from
	// the queue by an anchor; Batches counts batches cut. All three count since the process
	// started.
	Accepted float64 `json:"accepted"`
	Anchored float64 `json:"anchored"`
	Batches  float64 `json:"batches"`
	// AcceptedPerSecond and AnchoredPerSecond are the counters' rates since the sample before
	// (0 in the first sample).
	AcceptedPerSecond float64 `json:"acceptedPerSecond"`
	AnchoredPerSecond float64 `json:"anchoredPerSecond"`
	// QueueDepth counts operations not yet anchored: queued or in a batch being anchored.
	QueueDepth float64 `json:"queueDepth"`
	// OldestAgeSeconds is the age of the oldest operation waiting for a batch (0 when none).
	OldestAgeSeconds float64 `json:"oldestAgeSeconds"`
}

// PipelineSource gives the pipeline figures (explorer.Recorder).
type PipelineSource interface {
	// Pipeline returns the figures now and the recorded samples of the last minutes, oldest
	// first, with the interval between samples.
	Pipeline() (now PipelineSample, history []PipelineSample, interval time.Duration)
}

// BatchEntry is one recent batch of the pipeline view.
type BatchEntry struct {
	Seq            int64     `json:"seq"`
	OperationCount int       `json:"operationCount"`
	Status         string    `json:"status"`
	CreatedAt      time.Time `json:"createdAt"`
}

// PipelineView is the body of GET /explorer/api/pipeline. Now and History are this instance's
// (in a cluster each instance has its own queue); RecentBatches and DeadLetters are the whole
// deployment's, from the database.
type PipelineView struct {
	Now             PipelineSample   `json:"now"`
	History         []PipelineSample `json:"history"`
	IntervalSeconds float64          `json:"intervalSeconds"`
	RecentBatches   []BatchEntry     `json:"recentBatches"`
	// DeadLetters counts parked items by kind (operation, message, ledger_batch, …).
	DeadLetters map[string]int64 `json:"deadLetters"`
}

func (a *explorerAPI) getPipeline(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Pipeline == nil {
		WriteError(w, http.StatusNotFound, "not_found", "this instance runs no pipeline")
		return
	}
	now, history, interval := a.cfg.Pipeline.Pipeline()
	v := PipelineView{Now: now, History: history, IntervalSeconds: interval.Seconds(), RecentBatches: []BatchEntry{}}
	if v.History == nil {
		v.History = []PipelineSample{}
	}
	ctx := r.Context()
	list, err := a.cfg.Store.AnchorListLatest(ctx, store.AnchorListLatestParams{Limit: explorerRecentBatches})
	if err != nil {
		a.unavailable(w, r, "list latest anchors", err)
		return
	}
	for _, an := range list {
		v.RecentBatches = append(v.RecentBatches, BatchEntry{Seq: an.Seq, OperationCount: an.OpCount, Status: an.Status, CreatedAt: an.CreatedAt})
	}
	if v.DeadLetters, err = a.cfg.Store.DeadLetterCountByKind(ctx); err != nil {
		a.unavailable(w, r, "count dead letters", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// FederationSource gives the federation view (the federation service).
type FederationSource interface {
	Federation(ctx context.Context) (FederationView, error)
}

// FederationView is the body of GET /explorer/api/federation. When this domain takes no part in
// a federation, Enabled is false and every list is empty.
type FederationView struct {
	Enabled bool `json:"enabled"`
	// Actor is this domain's service actor IRI.
	Actor string `json:"actor,omitempty"`
	// Followers follow this domain; Following are the domains this one follows; Witnesses are
	// the domains that witness this one's anchors; Witnessing are the domains this one
	// witnesses for.
	Followers  []FederationPeer `json:"followers"`
	Following  []FederationPeer `json:"following"`
	Witnesses  []FederationPeer `json:"witnesses"`
	Witnessing []FederationPeer `json:"witnessing"`
}

// FederationPeer is one related domain.
type FederationPeer struct {
	// Actor is the peer's service actor IRI.
	Actor string `json:"actor"`
	// Since is when the relationship was accepted.
	Since *time.Time `json:"since,omitempty"`
	// LastDelivery is the latest activity this domain sent to the peer; absent when none was.
	LastDelivery *FederationDelivery `json:"lastDelivery,omitempty"`
}

// FederationDelivery states of FederationDelivery.State.
const (
	DeliveryDelivered = "delivered" // the peer's inbox accepted it
	DeliveryPending   = "pending"   // not attempted yet
	DeliveryRetrying  = "retrying"  // failed at least once, will be retried
	DeliveryParked    = "parked"    // retries exhausted: a dead letter
)

// FederationDelivery is the state of one delivery of an activity to a peer's inbox.
type FederationDelivery struct {
	// Activity is the activity's type (Create, Announce, Offer, Follow, …).
	Activity string `json:"activity"`
	State    string `json:"state"`
	// At is when the state was reached (the last attempt, or the queueing when pending).
	At       time.Time `json:"at"`
	Attempts int       `json:"attempts"`
	// Error is the last failure, short and safe to show.
	Error string `json:"error,omitempty"`
}

func (a *explorerAPI) getFederation(w http.ResponseWriter, r *http.Request) {
	v := FederationView{}
	if a.cfg.Federation != nil {
		var err error
		if v, err = a.cfg.Federation.Federation(r.Context()); err != nil {
			a.unavailable(w, r, "federation view", err)
			return
		}
	}
	for _, l := range []*[]FederationPeer{&v.Followers, &v.Following, &v.Witnesses, &v.Witnessing} {
		if *l == nil {
			*l = []FederationPeer{}
		}
	}
	writeJSON(w, http.StatusOK, v)
}
