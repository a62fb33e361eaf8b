package relay

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/failpoint"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/sidetree/batchfile"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
	"github.com/anchord/anchord/internal/vc"
)

// PostTxFunc posts an activity through the outbox inside the caller's transaction: the outbox
// row and its deliveries commit with tx. exclude names actors not to deliver to. It returns the
// activity's id.
type PostTxFunc func(ctx context.Context, tx store.Executor, a *activity.Activity, exclude ...string) (string, error)

// PrepareFunc lays out activity a for the outbox outside any transaction and returns what posts
// it inside one. linkset is the CAS content of the linkset a embeds, which the caller puts in
// CAS in that transaction before posting, so that the outbox can store a without it (the
// daemon's is federation.Service.Prepare).
//
// The publisher prepares before its transaction because an anchor's Create of 10,000
// operations embeds some 460 KB of linkset: writing it and working out its stored form take
// milliseconds that, inside the transaction, every other writer of SQLite would wait for.
type PrepareFunc func(a *activity.Activity, linkset []byte) (PostPreparedFunc, error)

// PostPreparedFunc posts a prepared activity inside the caller's transaction: the outbox row
// and its deliveries commit with tx, to the recipients of the moment. It returns the
// activity's id.
type PostPreparedFunc func(ctx context.Context, tx store.Executor) (string, error)

// Publisher posts a Create of each anchor this domain completes to its followers, in sequence
// order, once (see the package documentation).
type Publisher struct {
	cfg     Config
	st      store.Store
	cas     *cas.Store
	prepare PrepareFunc
	m       *publisherMetrics
	wake    chan struct{}
	signal  testsignal.Signal[PublishResult]

	mu sync.Mutex
	// indexed holds the DIDs of anchors this process indexed and has not published yet, so
	// that publishing does not read the batch back; bounded by indexedMax.
	indexed map[int64][]string
	// published is the last anchor seen published, here or by another instance. Anchors are
	// published in sequence, so DIDs handed over for it or an earlier anchor would never be
	// taken: an anchor published before its observer's hand-over arrived, and every anchor of
	// another domain (indexed here, never published by us). They were kept until the bound
	// pushed them out, and a full map of anchors of 10,000 DIDs is 2.6 million strings that
	// every collection marks (a cluster instance loading ten million DIDs held ~150 MB of them).
	published int64
}

// indexedMax bounds Publisher.indexed; an anchor whose DIDs it lost is read back from CAS.
const indexedMax = 256

// NewPublisher returns a Publisher that posts its Creates through prepare.
func NewPublisher(cfg Config, st store.Store, cs *cas.Store, prepare PrepareFunc) (*Publisher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if prepare == nil {
		return nil, errors.New("new publisher: no outbox")
	}
	m, err := newPublisherMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Publisher{cfg: cfg, st: st, cas: cs, prepare: prepare, m: m, wake: make(chan struct{}, 1), indexed: map[int64][]string{}}, nil
}

// Indexed tells the Publisher that anchor seq was indexed with the operations of these DIDs (in
// batch order; nil when not known), and wakes it.
func (p *Publisher) Indexed(seq int64, suffixes []string) {
	if suffixes != nil {
		p.mu.Lock()
		if seq <= p.published {
			p.mu.Unlock()
			return
		}
		if len(p.indexed) >= indexedMax {
			for k := range p.indexed { // published elsewhere, most likely: any one may go
				delete(p.indexed, k)
				break
			}
		}
		p.indexed[seq] = suffixes
		p.mu.Unlock()
	}
	p.Notify()
}

// Notify wakes the Publisher: an anchor was indexed.
func (p *Publisher) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// PublishResult describes one runOnce.
type PublishResult struct {
	// Seq is the anchor published; zero if none was.
	Seq int64
	// Hashlink is its hashlink; ActivityID the Create's id.
	Hashlink   string
	ActivityID string
	// Blocked is the anchor that must be published next but is still pending or not indexed.
	Blocked int64
}

// Run publishes anchors as they are indexed until ctx is done.
func (p *Publisher) Run(ctx context.Context) error {
	failures := 0
	for {
		res, err := p.runOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			failures++
			wait := loop.Backoff(failures, 100*time.Millisecond, 2, 30*time.Second)
			p.cfg.Logger.ErrorContext(ctx, "publish anchor", "error", err, "retry_in", wait)
			if !loop.Sleep(ctx, wait) {
				return nil
			}
			continue
		case res.Seq != 0:
			failures = 0
			continue // there may be more
		}
		failures = 0
		t := time.NewTimer(p.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-p.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// runOnce publishes the next anchor of ours, if it is ready.
func (p *Publisher) runOnce(ctx context.Context) (PublishResult, error) {
	next, err := p.st.AnchorNextToPublish(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return PublishResult{}, nil
	}
	if err != nil {
		return PublishResult{}, err
	}
	if next.Status != store.AnchorCompleted || next.ObservedAt == nil {
		return PublishResult{Blocked: next.Seq}, nil
	}
	failpoint.Hit(failpoint.RelayBeforePublish)
	start := time.Now()
	// Built and prepared for the outbox outside the transaction: reading the batch, signing,
	// writing the Create and working out how the outbox stores it take milliseconds, and on
	// SQLite a write transaction holds back every other writer.
	act, lsCID, ls, err := p.build(ctx, next)
	if err != nil {
		return PublishResult{}, fmt.Errorf("publish anchor %d: %w", next.Seq, err)
	}
	post, err := p.prepare(act, ls)
	if err != nil {
		return PublishResult{}, fmt.Errorf("publish anchor %d: %w", next.Seq, err)
	}
	// The anchor is known by its event's url, the hashlink of the linkset with a link to this
	// domain's copy: what Orb records as an anchor's identity and names DIDs by (the hash in
	// did:orb:<hash>:<suffix>), and what the next anchors of its DIDs name as their parent.
	res := PublishResult{Seq: next.Seq, Hashlink: act.Object.AnchorEvent.URL[0]}
	err = p.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		again, err := tx.AnchorNextToPublish(ctx)
		if err != nil {
			return err
		}
		if again.Seq != next.Seq {
			return errPublishedElsewhere
		}
		if err := tx.AnchorMarkPublished(ctx, next.Seq, res.Hashlink); err != nil {
			return err
		}
		if err := p.cas.PutAddressedTx(ctx, tx, lsCID, ls); err != nil {
			return err
		}
		if res.ActivityID, err = post(ctx, tx); err != nil {
			return err
		}
		failpoint.Hit(failpoint.RelayBeforePublishCommit)
		return nil
	})
	if errors.Is(err, errPublishedElsewhere) || errors.Is(err, store.ErrNotFound) {
		// Another instance published it (or is publishing it) first; nothing was written here.
		p.forget(next.Seq)
		return PublishResult{Seq: next.Seq}, nil
	}
	if err != nil {
		return PublishResult{}, fmt.Errorf("publish anchor %d: %w", next.Seq, err)
	}
	p.forget(next.Seq)
	p.m.published.Inc()
	p.m.duration.Observe(time.Since(start).Seconds())
	p.cfg.Logger.DebugContext(ctx, "anchor published", "seq", next.Seq, "hashlink", res.Hashlink, "activity", res.ActivityID)
	p.signal.Signal(res)
	return res, nil
}

var errPublishedElsewhere = errors.New("anchor published by another publisher")

// build lays out anchor a's Create, whose event embeds a's linkset, and the linkset's CID here
// and bytes.
func (p *Publisher) build(ctx context.Context, a store.Anchor) (*activity.Activity, string, []byte, error) {
	id := p.cfg.Identity
	link, err := p.link(ctx, a)
	if err != nil {
		return nil, "", nil, err
	}
	ls := &activity.Linkset{Linkset: []activity.Link{*link}}
	lsJSON, err := ls.Canonical()
	if err != nil {
		return nil, "", nil, err
	}
	lsCID := p.cas.Address(lsJSON)
	now := time.Now().UTC()
	act := &activity.Activity{
		Context:   activity.Strings{activity.ContextActivityStreams},
		Type:      activity.TypeCreate,
		Actor:     id.ActorIRI,
		To:        activity.Strings{id.FollowersIRI, activity.PublicIRI},
		Object:    &activity.Object{AnchorEvent: activity.NewAnchorEvent(activity.NewHashlink(lsJSON, casURL(id.Endpoint, lsCID)), ls)},
		Published: &now,
	}
	return act, lsCID, lsJSON, nil
}

// link returns anchor a's link: the one fixed when it was offered to witnesses (LinkFunc), or
// laid out now with a credential signed by the domain key.
func (p *Publisher) link(ctx context.Context, a store.Anchor) (*activity.Link, error) {
	if p.cfg.LinkFunc != nil {
		link, ok, err := p.cfg.LinkFunc(ctx, a.Seq)
		if err != nil || ok {
			return link, err
		}
	}
	id := p.cfg.Identity
	suffixes, err := p.suffixes(ctx, a)
	if err != nil {
		return nil, err
	}
	previous, err := p.st.DIDLatestAnchors(ctx, suffixes, a.Seq)
	if err != nil {
		return nil, err
	}
	core, err := p.cas.Get(ctx, a.CoreIndexCID, p.cfg.Limits.MaxCoreIndexFileSize)
	if err != nil {
		return nil, fmt.Errorf("read core index: %w", err)
	}
	content := activity.AnchorContent{
		CoreIndex:  activity.NewHashlink(core, casURL(id.Endpoint, a.CoreIndexCID)),
		Author:     id.ActorIRI,
		Operations: make([]activity.SuffixAnchor, len(suffixes)),
	}
	for i, s := range suffixes {
		content.Operations[i].Suffix = s
		if ref, ok := previous[s]; ok {
			if ref.Hashlink == "" {
				// Anchors are published in sequence order, so this is a bug or a database
				// edited by hand; publishing a wrong parent would strand the DID at followers.
				return nil, fmt.Errorf("previous anchor %d of DID %s has no hashlink", ref.Seq, s)
			}
			content.Operations[i].Previous = ref.Hashlink
		}
	}
	now := time.Now().UTC()
	issued, err := p.issued(a, now)
	if err != nil {
		return nil, err
	}
	return activity.BuildAnchorLink(content, p.cfg.MediaType, func(hashlink, coreIndex string) ([]byte, error) {
		return p.credential(hashlink, coreIndex, issued, now)
	})
}

// issued is when anchor a's credential says it was issued: now, or in the did:orb profile the
// anchor's own time, which the batch writer took from the anchor clock so that no two anchors
// of this domain fall in one whole second (Orb orders a DID's operations by that second; the
// publishing times of two anchors can be closer than their anchoring).
func (p *Publisher) issued(a store.Anchor, now time.Time) (time.Time, error) {
	if !p.cfg.Profile.Orb {
		return now, nil
	}
	var rec anchor.Record
	if err := json.Unmarshal(a.Record, &rec); err != nil {
		return time.Time{}, fmt.Errorf("anchor %d: read its time from its record: %w", a.Seq, err)
	}
	if rec.Time.IsZero() {
		return time.Time{}, fmt.Errorf("anchor %d: its record has no time", a.Seq)
	}
	return rec.Time.UTC(), nil
}

// forget drops the DIDs handed over for anchor seq and every earlier one: seq is published.
func (p *Publisher) forget(seq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.published = max(p.published, seq)
	for k := range p.indexed {
		if k <= seq {
			delete(p.indexed, k)
		}
	}
}

// suffixes returns the DIDs of anchor a in batch order: as the observer handed them over, or
// read back from the batch's index files (after a restart, or when another instance indexed
// it).
func (p *Publisher) suffixes(ctx context.Context, a store.Anchor) ([]string, error) {
	p.mu.Lock()
	suffixes, ok := p.indexed[a.Seq]
	delete(p.indexed, a.Seq)
	p.mu.Unlock()
	if ok && len(suffixes) == a.OpCount {
		return suffixes, nil
	}
	// The two index files name every DID; deltas and proofs need not be read.
	outline, err := batchfile.ReadOutline(a.AnchorString, p.cas.FetchFunc(ctx), p.cfg.Limits)
	if err == nil {
		err = outline.ProvisionalErr
	}
	if err != nil {
		return nil, fmt.Errorf("read batch outline: %w", err)
	}
	suffixes = make([]string, len(outline.Operations))
	for i, op := range outline.Operations {
		suffixes[i] = op.Suffix
	}
	return suffixes, nil
}

// credential issues and signs the anchor credential of hashlink with the domain key, as Orb's
// origin does: issuer and verification method on the domain's did:web, domain its endpoint.
func (p *Publisher) credential(hashlink, coreIndex string, issued, now time.Time) ([]byte, error) {
	id := p.cfg.Identity
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	c, err := vc.NewAnchorCredential(vc.AnchorParams{
		ID: id.Endpoint + "/vc/" + hex.EncodeToString(nonce[:]), Issuer: id.DID, Issued: issued, HRef: hashlink, Anchor: coreIndex,
	})
	if err != nil {
		return nil, err
	}
	pub := id.Key.Public().(ed25519.PublicKey)
	signed, err := vc.Sign(c, id.Key, vc.ProofOptions{VerificationMethod: id.DID + "#" + vc.KeyID(pub), Domain: id.Endpoint, Created: now})
	if err != nil {
		return nil, err
	}
	return json.Marshal(signed)
}

// casURL is where a domain serves a CAS file.
func casURL(endpoint, cid string) string { return endpoint + "/cas/" + cid }
