package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/loop"
	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/testsignal"
)

// Errors of the handlers.
var (
	// ErrInvalid is wrapped when an anchor event is wrong (its hashes, its author, its
	// credential, its files): retrying cannot help.
	ErrInvalid = errors.New("invalid anchor event")
	// ErrNotFollowed is wrapped when the sender is not a domain this one follows.
	ErrNotFollowed = errors.New("anchor event from a domain this domain does not follow")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// ObserveFunc indexes another domain's anchor (observer.Observer.ObserveForeign).
type ObserveFunc func(ctx context.Context, a observer.ForeignAnchor, fn observer.ForeignFunc) (observer.Result, error)

// FollowingFunc reports whether this domain follows actor (the relationship is accepted).
type FollowingFunc func(ctx context.Context, actor string) (bool, error)

// Inbound is a Create or Announce the inbox hands over.
type Inbound struct {
	Activity *activity.Activity
	// Body is the activity exactly as received: anchor events are read from it, because their
	// url hashes the sender's bytes.
	Body []byte
	// Actor is the verified sender.
	Actor string
	// Live: delivered to our inbox, not read back by the activity sync.
	Live bool
}

// Receiver observes the anchors of the domains this one follows (see the package doc).
type Receiver struct {
	cfg       Config
	st        store.Store
	cas       *cas.Store
	observe   ObserveFunc
	fetch     FetchFunc
	post      PostTxFunc
	following FollowingFunc
	keys      *keyResolver
	m         *receiverMetrics
	wake      chan struct{}
	signal    testsignal.Signal[Applied]
}

// NewReceiver returns a Receiver.
func NewReceiver(cfg Config, st store.Store, cs *cas.Store, observe ObserveFunc, fetch FetchFunc, post PostTxFunc, following FollowingFunc) (*Receiver, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if observe == nil || fetch == nil || post == nil || following == nil {
		return nil, errors.New("new receiver: observe, fetch, post and following are required")
	}
	m, err := newReceiverMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Receiver{
		cfg: cfg, st: st, cas: cs, observe: observe, fetch: fetch, post: post, following: following,
		keys: newKeyResolver(fetch, cfg.KeyCacheTTL, cfg.KeyCacheSize), m: m, wake: make(chan struct{}, 1),
	}, nil
}

// Applied describes one anchor event handled.
type Applied struct {
	Hashlink string
	Outcome  string
	// Seq and Operations: where the anchor was recorded and how many operations were indexed
	// (outcome applied).
	Seq        int64
	Operations int
	Stale      int
	// WaitingFor is the parent the anchor waits for (outcome waiting).
	WaitingFor string
}

// event is one anchor event to handle.
type event struct {
	raw    []byte
	sender string
	create bool // from a Create: the author must be the sender
	live   bool // announce once applied
	// published is the activity's time at the sender, zero if unknown (for the lag metric).
	published time.Time
	// waiting is set when the event comes from the waiting table.
	waiting bool
}

// HandleCreate handles a Create of an AnchorEvent.
func (r *Receiver) HandleCreate(ctx context.Context, in Inbound) error {
	if in.Actor == r.cfg.Identity.ActorIRI {
		return nil // our own Create, read back from a follower's inbox by the activity sync
	}
	if err := r.checkFollowing(ctx, in.Actor); err != nil {
		return err
	}
	var env struct {
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(in.Body, &env); err != nil || len(env.Object) == 0 {
		return invalidf("Create %s carries no object", activityID(in.Activity))
	}
	_, err := r.apply(ctx, event{raw: env.Object, sender: in.Actor, create: true, live: in.Live, published: publishedAt(in.Activity)})
	return err
}

// HandleAnnounce handles an Announce of a collection of AnchorEvents: each is handled as a
// Create's would be, except that its author may be a third domain and it is not announced
// again. An invalid event is skipped (and counted); any other failure fails the whole Announce,
// whose events already applied are then duplicates on the retry.
func (r *Receiver) HandleAnnounce(ctx context.Context, in Inbound) error {
	if in.Actor == r.cfg.Identity.ActorIRI {
		return nil
	}
	if err := r.checkFollowing(ctx, in.Actor); err != nil {
		return err
	}
	var env struct {
		Object struct {
			Items        []json.RawMessage `json:"items"`
			OrderedItems []json.RawMessage `json:"orderedItems"`
		} `json:"object"`
	}
	if err := json.Unmarshal(in.Body, &env); err != nil {
		return invalidf("Announce %s: %v", activityID(in.Activity), err)
	}
	items := append(env.Object.Items, env.Object.OrderedItems...)
	if len(items) == 0 {
		return invalidf("Announce %s announces nothing", activityID(in.Activity))
	}
	var invalid []error
	for _, raw := range items {
		_, err := r.apply(ctx, event{raw: raw, sender: in.Actor, published: publishedAt(in.Activity)})
		switch {
		case errors.Is(err, ErrInvalid):
			invalid = append(invalid, err)
		case err != nil:
			return err
		}
	}
	if len(invalid) == len(items) {
		return fmt.Errorf("announce %s: %w", activityID(in.Activity), errors.Join(invalid...))
	}
	for _, err := range invalid {
		r.cfg.Logger.WarnContext(ctx, "announced anchor event skipped", "activity", activityID(in.Activity), "sender", in.Actor, "error", err)
	}
	return nil
}

func (r *Receiver) checkFollowing(ctx context.Context, actor string) error {
	ok, err := r.following(ctx, actor)
	if err != nil {
		return fmt.Errorf("is %s followed: %w", actor, err)
	}
	if !ok {
		r.m.anchors.WithLabelValues(outcomeRefused).Inc()
		return fmt.Errorf("%w: %s", ErrNotFollowed, actor)
	}
	return nil
}

func activityID(a *activity.Activity) string {
	if a == nil {
		return ""
	}
	return a.ID
}

func publishedAt(a *activity.Activity) time.Time {
	if a == nil || a.Published == nil {
		return time.Time{}
	}
	return *a.Published
}

// apply handles one anchor event: checked, recorded as waiting, or indexed.
func (r *Receiver) apply(ctx context.Context, ev event) (Applied, error) {
	res, err := r.applyEvent(ctx, ev)
	switch {
	case errors.Is(err, ErrInvalid):
		res.Outcome = outcomeInvalid
	case err != nil:
		return res, err
	}
	r.m.anchors.WithLabelValues(res.Outcome).Inc()
	if res.Outcome == outcomeApplied {
		r.Notify() // its waiting children may go now
		if ev.live && !ev.published.IsZero() {
			r.m.lag.Observe(time.Since(ev.published).Seconds())
		}
	}
	r.signal.Signal(res)
	return res, err
}

func (r *Receiver) applyEvent(ctx context.Context, ev event) (Applied, error) {
	var ae activity.AnchorEvent
	if err := json.Unmarshal(ev.raw, &ae); err != nil {
		return Applied{}, invalidf("anchor event: %v", err)
	}
	if ae.Type != activity.TypeAnchorEvent {
		return Applied{}, invalidf("object of type %q is not an AnchorEvent", ae.Type)
	}
	if err := ae.VerifyURL(); err != nil {
		return Applied{}, invalidf("%v", err)
	}
	ls := ae.Object
	if ls == nil {
		var err error
		if ls, err = r.fetchLinkset(ctx, &ae, ev.sender); err != nil {
			return Applied{}, err
		}
	}
	link := ls.Link()
	if err := link.Validate(); err != nil {
		return Applied{}, invalidf("%v", err)
	}
	// An anchor is known by its event's url (VerifyURL checked it is one hashlink of the
	// linkset), exactly as its author wrote it: Orb records that string as the anchor's
	// identity, names DIDs by its hash, and writes it verbatim into the related.up of the next
	// anchors of the same DIDs, where it is looked up again.
	key := ae.URL[0]
	res := Applied{Hashlink: key}
	author := link.Author.First()
	if ev.create && author != ev.sender {
		return res, invalidf("anchor %s is by %s, not by the sender %s", link.Anchor, author, ev.sender)
	}
	if hostBase(author) == "" {
		return res, invalidf("author %q is not an http(s) IRI", author)
	}
	if have, err := r.st.AnchorsByHashlink(ctx, []string{key}); err != nil {
		return res, err
	} else if _, ok := have[key]; ok {
		res.Outcome = outcomeDuplicate
		if ev.waiting {
			err = ignoreNotFound(r.st.WaitingAnchorDelete(ctx, key))
		}
		return res, err
	}
	content, err := link.AnchorContent()
	if err != nil {
		return res, invalidf("%v", err)
	}
	if author != content.Author {
		return res, invalidf("link author %s differs from its original's %s", author, content.Author)
	}
	if len(link.Replies) == 0 {
		return res, invalidf("anchor %s has no credential", link.Anchor)
	}
	credential, err := link.Replies[0].Content(activity.MaxLinksetBytesDefault)
	if err != nil {
		return res, invalidf("credential: %v", err)
	}
	core, _ := activity.ParseHashlink(content.CoreIndex) // AnchorContent parsed it
	issued, err := r.keys.checkCredential(ctx, credential, link.Anchor, core.Anchor(), author)
	if err != nil {
		return res, err
	}

	previous := map[string]string{} // suffix → previous anchor ("" for a create)
	var parents []string
	seen := map[string]bool{}
	for _, op := range content.Operations {
		p := ""
		if op.Previous != "" {
			if _, err := activity.ParseHashlink(op.Previous); err != nil {
				return res, invalidf("previous anchor of %s: %v", op.Suffix, err)
			}
			p = op.Previous // the related.up entry, as the parent's event url was written
			if !seen[p] {
				seen[p] = true
				parents = append(parents, p)
			}
		}
		previous[op.Suffix] = p
	}
	have, err := r.st.AnchorsByHashlink(ctx, parents)
	if err != nil {
		return res, err
	}
	for _, p := range parents {
		if _, ok := have[p]; !ok {
			res.Outcome, res.WaitingFor = outcomeWaiting, p
			return res, r.wait(ctx, ev, key, author, p)
		}
	}

	batch, anchor, files, err := r.readBatch(ctx, content, author, ev.sender)
	if err != nil {
		return res, err
	}
	announce, err := r.announcement(ev)
	if err != nil {
		return res, err
	}
	stale := 0
	got, err := r.observe(ctx, observer.ForeignAnchor{
		AnchorString: anchor.String(), CoreIndexCID: anchor.CoreIndexURI, Origin: author, Hashlink: key,
		IssuedAt: issued, Operations: batch.Operations,
	}, func(ctx context.Context, tx store.Executor, seq int64, ops []sidetree.AnchoredOperation) ([]sidetree.AnchoredOperation, error) {
		keep, n, err := r.previousAnchorRule(ctx, tx, seq, ops, previous, author)
		if err != nil {
			return nil, err
		}
		stale = n
		for cid, data := range files {
			if err := r.cas.PutAddressedTx(ctx, tx, cid, data); err != nil {
				return nil, err
			}
		}
		if ev.waiting {
			if err := ignoreNotFound(tx.WaitingAnchorDelete(ctx, key)); err != nil {
				return nil, err
			}
		}
		if announce != nil {
			if _, err := r.post(ctx, tx, announce, ev.sender); err != nil {
				return nil, err
			}
		}
		return keep, nil
	})
	if errors.Is(err, store.ErrConflict) {
		// Recorded meanwhile by another handler (a sync copy, another instance).
		res.Outcome = outcomeDuplicate
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.Outcome, res.Seq, res.Operations, res.Stale = outcomeApplied, got.Seq, got.Operations, stale
	r.cfg.Logger.DebugContext(ctx, "anchor of another domain applied", "hashlink", key, "origin", author, "seq", got.Seq, "operations", got.Operations, "stale", stale)
	return res, nil
}

// previousAnchorRule keeps the operations whose previous anchor is their DID's latest anchor
// here, read in the indexing transaction itself: a create must name none and its DID have none
// here; any other operation must name one, and it must be its DID's latest here (an anchor of
// ours not yet published has no hashlink, so it never matches). It returns them and how many it
// refused.
func (r *Receiver) previousAnchorRule(ctx context.Context, tx store.Executor, seq int64, ops []sidetree.AnchoredOperation, previous map[string]string, author string) ([]sidetree.AnchoredOperation, int, error) {
	suffixes := make([]string, len(ops))
	for i, op := range ops {
		suffixes[i] = op.Suffix
	}
	latest, err := tx.DIDLatestAnchors(ctx, suffixes, seq)
	if err != nil {
		return nil, 0, err
	}
	keep := make([]sidetree.AnchoredOperation, 0, len(ops))
	stale := 0
	for _, op := range ops {
		want, listed := previous[op.Suffix]
		have := latest[op.Suffix]
		ok := listed && have.Hashlink == want && want != ""
		if op.Type == sidetree.OperationCreate {
			ok = listed && want == "" && have.Seq == 0
		}
		if ok {
			keep = append(keep, op)
			continue
		}
		stale++
		r.m.stale.Inc()
		r.cfg.Logger.WarnContext(ctx, "operation of another domain not applied: its previous anchor is not the DID's latest here",
			"suffix", op.Suffix, "type", op.Type, "origin", author, "previous", want, "latest_here", have.Hashlink, "listed", listed)
	}
	return keep, stale, nil
}

// announcement is the Announce of a live Create's event to our followers, as Orb sends it: a
// collection holding the event exactly as received. Announced and synced events are not
// forwarded again.
func (r *Receiver) announcement(ev event) (*activity.Activity, error) {
	if !ev.create || !ev.live {
		return nil, nil
	}
	id := r.cfg.Identity
	now := time.Now().UTC()
	return &activity.Activity{
		Context:   activity.Strings{activity.ContextActivityStreams},
		Type:      activity.TypeAnnounce,
		Actor:     id.ActorIRI,
		To:        activity.Strings{id.FollowersIRI, activity.PublicIRI},
		Published: &now,
		Object: &activity.Object{Collection: &activity.Collection{
			Type: activity.TypeCollection, TotalItems: 1,
			Items: []*activity.Object{{Document: json.RawMessage(ev.raw)}},
		}},
	}, nil
}

// wait records an anchor whose parent is not here, within the origin's bound.
func (r *Receiver) wait(ctx context.Context, ev event, hashlink, origin, parent string) error {
	if ev.waiting {
		return ignoreNotFound(r.st.WaitingAnchorUpdate(ctx, hashlink, parent))
	}
	n, err := r.st.WaitingAnchorCount(ctx, origin)
	if err != nil {
		return err
	}
	if n >= r.cfg.MaxWaitingPerOrigin {
		return fmt.Errorf("%d anchors of %s already wait for their parents; retry later", n, origin)
	}
	if err := r.st.WaitingAnchorInsert(ctx, store.WaitingAnchor{
		Hashlink: hashlink, Origin: origin, Sender: ev.sender, Live: ev.create && ev.live, WaitingFor: parent, Event: ev.raw,
	}); err != nil {
		return err
	}
	// The parent may have been applied between the check and the insert.
	r.Notify()
	return nil
}

// fetchLinkset reads the linkset of an event that carries only its url, from a link on the
// sender's host, and checks it against the url.
func (r *Receiver) fetchLinkset(ctx context.Context, ae *activity.AnchorEvent, sender string) (*activity.Linkset, error) {
	h, err := ae.Hashlink()
	if err != nil {
		return nil, invalidf("%v", err)
	}
	var errs []error
	for _, l := range h.Links {
		if hostBase(l) == "" || hostBase(l) != hostBase(sender) {
			continue
		}
		data, err := r.fetch(ctx, l, activity.MaxLinksetBytesDefault)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := h.Verify(data); err != nil {
			return nil, invalidf("linkset at %s: %v", l, err)
		}
		ls, err := activity.ParseLinkset(data)
		if err != nil {
			return nil, invalidf("linkset at %s: %v", l, err)
		}
		return ls, nil
	}
	if len(errs) == 0 {
		return nil, invalidf("anchor event %s carries no linkset and no link on the sender's host", h.Anchor())
	}
	return nil, fmt.Errorf("%w: linkset %s: %w", errUnreachable, h.Anchor(), errors.Join(errs...))
}

// Notify wakes the sweep: an anchor was applied, or one started waiting.
func (r *Receiver) Notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// SweepResult describes one sweep of the waiting anchors.
type SweepResult struct {
	// Tried is how many waiting anchors were tried; Applied how many of them were indexed.
	Tried, Applied int
	// Waiting is how many still wait.
	Waiting int
}

// Run tries the waiting anchors whose parent has arrived, when woken and every PollInterval,
// until ctx is done.
func (r *Receiver) Run(ctx context.Context) error {
	failures := 0
	for {
		if _, err := r.runOnce(ctx); err != nil && ctx.Err() == nil {
			failures++
			wait := loop.Backoff(failures, 100*time.Millisecond, 2, 30*time.Second)
			r.cfg.Logger.WarnContext(ctx, "try waiting anchors", "error", err, "retry_in", wait)
			if !loop.Sleep(ctx, wait) {
				return nil
			}
			continue
		}
		failures = 0
		t := time.NewTimer(r.cfg.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-r.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// runOnce tries the waiting anchors whose parent is applied, round after round while anchors
// get applied, for at most MaxCascade rounds: the depth of a parent chain resolved at once.
func (r *Receiver) runOnce(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	for range r.cfg.MaxCascade {
		ready, err := r.st.WaitingAnchorReady(ctx, r.cfg.ReadyBatch)
		if err != nil {
			return res, err
		}
		if len(ready) == 0 {
			break
		}
		for _, w := range ready {
			res.Tried++
			got, err := r.apply(ctx, event{raw: w.Event, sender: w.Sender, create: w.Origin == w.Sender, live: w.Live, waiting: true})
			switch {
			case errors.Is(err, ErrInvalid):
				// It cannot become valid: drop it, as its children will be once they are tried.
				r.cfg.Logger.WarnContext(ctx, "waiting anchor dropped", "hashlink", w.Hashlink, "origin", w.Origin, "error", err)
				if err := ignoreNotFound(r.st.WaitingAnchorDelete(ctx, w.Hashlink)); err != nil {
					return res, err
				}
			case err != nil:
				return res, fmt.Errorf("waiting anchor %s: %w", w.Hashlink, err)
			case got.Outcome == outcomeApplied:
				res.Applied++
			}
		}
	}
	n, err := r.st.WaitingAnchorCount(ctx, "")
	if err != nil {
		return res, err
	}
	res.Waiting = n
	r.m.waiting.Set(float64(n))
	return res, nil
}

func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}
