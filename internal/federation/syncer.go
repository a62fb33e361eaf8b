package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/store"
)

// SyncTaskID is the task id (and permit) of the activity sync.
const SyncTaskID = "activity-sync"

// maxSyncPages bounds the pages one source is read in one run, whatever it answers.
const maxSyncPages = 1000

// A source that refuses to be read (401 or 403) is tried again after refusedBackoffMin, then
// after twice as long each time, up to refusedBackoffMax. Orb shows its inbox only to its
// followers and witnesses (an anchord domain only to its followers, witnesses and the domains
// it follows): a domain that follows us and that we do not follow refuses for as long as that
// lasts, and trying every run would only repeat the refusal.
const (
	refusedBackoffMin = time.Minute
	refusedBackoffMax = time.Hour
)

// Syncer is the activity sync: what push missed, it pulls. Each run reads, from a stored
// position, the inbox of each follower (for our own Creates, which we may have lost) and the
// outbox of each domain we follow (for their Creates and Announces), and queues every such
// activity older than SyncMinActivityAge into our inbox, where the ordinary handlers process it.
// The inbox's unique activity id makes a repeat a no-op; a poison activity is parked by the
// processor and never holds its source back. It runs as a task, on one instance at a time.
type Syncer struct {
	s *Service
	// accelerated is set when the last run spent its budget.
	accelerated atomic.Bool

	mu sync.Mutex
	// refused holds the sources (actor!box) that refused to be read, until when they are left
	// alone; forgotten once one is read again.
	refused map[string]refusal
}

// refusal is a source that refused to be read: not tried again before until; wait is the
// back-off that set until.
type refusal struct {
	until time.Time
	wait  time.Duration
}

// SyncResult is what one run did.
type SyncResult struct {
	// Queued counts activities queued into the inbox.
	Queued int
	// Sources counts collections read; Failed those that could not be; Refused those left
	// alone because they refused to be read (see refusedBackoffMin).
	Sources, Failed, Refused int
}

// syncPosition is where the sync stopped in a source collection: the page, the items of it
// already read, and the items of the collection read so far (for the lag).
type syncPosition struct {
	Page  string `json:"page"`
	Index int    `json:"index"`
	Read  int    `json:"read"`
}

// Syncer returns the service's activity sync.
func (s *Service) Syncer() *Syncer { return &Syncer{s: s, refused: map[string]refusal{}} }

// RunTask is one run of the task.
func (y *Syncer) RunTask(ctx context.Context, _ int64) error {
	_, err := y.runOnce(ctx)
	return err
}

// NextInterval is the task's NextIntervalFunc: SyncAcceleratedInterval after a run that spent
// its budget (more is waiting), else the task's interval.
func (y *Syncer) NextInterval() time.Duration {
	if y.accelerated.Load() {
		return y.s.cfg.SyncAcceleratedInterval
	}
	return 0
}

// Interval is the task's interval (--sync-interval).
func (y *Syncer) Interval() time.Duration { return y.s.cfg.SyncInterval }

// runOnce reads followers' inboxes first (recovering what we lost comes first, as in Orb), then
// followed domains' outboxes, until SyncMaxActivities are queued. A source that fails is logged
// and skipped; failing to read our own relationships fails the run.
func (y *Syncer) runOnce(ctx context.Context) (SyncResult, error) {
	s := y.s
	var res SyncResult
	budget := s.cfg.SyncMaxActivities
	followers, err := s.Followers(ctx)
	if err != nil {
		return res, fmt.Errorf("activity sync: %w", err)
	}
	following, err := listRelationships(ctx, s.st, store.RelationshipFollowing)
	if err != nil {
		return res, fmt.Errorf("activity sync: %w", err)
	}
	// liveSince: what a followed domain published before it took us as a follower was never
	// delivered to us live, so the sync need not leave it to live delivery for
	// SyncMinActivityAge. We recorded the Accept after the peer took us, and the peer's clock
	// may be ahead of ours by up to MaxClockSkew, so everything published before our record plus
	// that skew is taken at once: what did arrive live among it is a no-op at the inbox.
	type source struct {
		actor, box string
		liveSince  time.Time
	}
	var sources []source
	for _, f := range followers {
		sources = append(sources, source{actor: f, box: "inbox"})
	}
	for _, f := range following {
		sources = append(sources, source{actor: f.Actor, box: "outbox", liveSince: f.UpdatedAt.Add(s.cfg.MaxClockSkew)})
	}
	for _, src := range sources {
		if budget <= 0 || ctx.Err() != nil {
			break
		}
		if y.leftAlone(src.actor, src.box) {
			res.Refused++
			continue
		}
		res.Sources++
		n, err := y.syncSource(ctx, src.actor, src.box, src.liveSince, budget)
		budget -= n
		res.Queued += n
		switch {
		case err != nil && refusedRead(err):
			res.Failed++
			y.refuse(ctx, src.actor, src.box, err)
		case err != nil:
			res.Failed++
			s.cfg.Logger.WarnContext(ctx, "activity sync source failed", "actor", src.actor, "collection", src.box, "error", err)
		default:
			y.readAgain(ctx, src.actor, src.box)
		}
	}
	y.accelerated.Store(budget <= 0)
	if res.Queued > 0 {
		s.cfg.Logger.InfoContext(ctx, "activity sync queued missed activities", "activities", res.Queued, "sources", res.Sources)
	}
	return res, ctx.Err()
}

// refusedRead reports whether err is a source's refusal to be read by us.
func refusedRead(err error) bool {
	var se *peer.StatusError
	return errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden)
}

// leftAlone reports whether a source that refused to be read is still left alone.
func (y *Syncer) leftAlone(actor, box string) bool {
	y.mu.Lock()
	defer y.mu.Unlock()
	r, ok := y.refused[actor+"!"+box]
	return ok && y.s.cfg.NowFunc().Before(r.until)
}

// refuse records a source's refusal and backs off from it. The first refusal is a warning; the
// ones after it, until the source is read again, are only counted.
func (y *Syncer) refuse(ctx context.Context, actor, box string, err error) {
	key := actor + "!" + box
	y.mu.Lock()
	r, again := y.refused[key]
	r.wait = min(max(2*r.wait, refusedBackoffMin), refusedBackoffMax)
	r.until = y.s.cfg.NowFunc().Add(r.wait)
	y.refused[key] = r
	y.mu.Unlock()
	y.s.m.syncRefused.WithLabelValues(box).Inc()
	if again {
		y.s.cfg.Logger.DebugContext(ctx, "activity sync source still refuses", "actor", actor, "collection", box, "error", err, "retry_in", r.wait)
		return
	}
	y.s.cfg.Logger.WarnContext(ctx, "activity sync source refuses to be read; it is tried again less and less often, and this is said again only once it has been read",
		"actor", actor, "collection", box, "error", err, "retry_in", r.wait,
		"hint", "an Orb domain shows its inbox only to its followers and witnesses: follow it to read what it received from us")
}

// readAgain forgets a source's refusal once it has been read.
func (y *Syncer) readAgain(ctx context.Context, actor, box string) {
	key := actor + "!" + box
	y.mu.Lock()
	_, was := y.refused[key]
	delete(y.refused, key)
	y.mu.Unlock()
	if was {
		y.s.cfg.Logger.InfoContext(ctx, "activity sync source read again", "actor", actor, "collection", box)
	}
}

// syncSource reads one collection from its stored position and queues what passes the filter,
// at most budget activities. It stops at an activity younger than SyncMinActivityAge, unless it
// was published before liveSince: newer ones follow it, and live delivery may still bring them.
func (y *Syncer) syncSource(ctx context.Context, actor, box string, liveSince time.Time, budget int) (int, error) {
	s := y.s
	key := actor + "!" + box
	pos, err := y.position(ctx, key)
	if err != nil {
		return 0, err
	}
	if pos.Page == "" {
		if pos.Page, err = y.firstPage(ctx, actor, box); err != nil {
			return 0, err
		}
	}
	queued := 0
	youngest := s.cfg.NowFunc().Add(-s.cfg.SyncMinActivityAge)
	save := func() error { return y.save(ctx, key, pos) }
	for range maxSyncPages {
		body, err := s.client.Fetch(ctx, pos.Page, activity.MaxCollectionBytesDefault)
		if err != nil {
			return queued, err
		}
		page, err := readPage(body)
		if err != nil {
			return queued, err
		}
		items := page.items()
		for pos.Index < len(items) {
			item, err := y.item(ctx, items[pos.Index], actor)
			if err != nil {
				return queued, errors.Join(err, save())
			}
			a, err := activity.ParseWithLimits(item, activity.Limits{MaxBytes: int(s.cfg.MaxInboxBytes)})
			switch {
			case err != nil:
				s.cfg.Logger.DebugContext(ctx, "activity sync skips an unreadable item", "page", pos.Page, "index", pos.Index, "error", err)
			case !y.wanted(a, actor, box):
			case !publishedBefore(a, youngest) && !publishedBefore(a, liveSince):
				y.lag(key, page.TotalItems-pos.Read)
				return queued, save()
			default:
				inserted, err := y.queue(ctx, a, item, actor)
				if err != nil {
					return queued, errors.Join(err, save())
				}
				if inserted {
					queued++
					s.m.syncQueued.WithLabelValues(box).Inc()
				}
			}
			pos.Index++
			pos.Read++
			if queued >= budget {
				y.lag(key, page.TotalItems-pos.Read)
				return queued, save()
			}
		}
		next := page.Next
		if next == "" || next == pos.Page {
			y.lag(key, page.TotalItems-pos.Read)
			return queued, save()
		}
		if !sameOrigin(next, actor) {
			return queued, errors.Join(fmt.Errorf("next page %q is not on %s's host", next, actor), save())
		}
		pos.Page, pos.Index = next, 0
		if err := save(); err != nil {
			return queued, err
		}
	}
	return queued, nil
}

// item returns a page item's activity: embedded, or named by its IRI (a page that would be too
// large names its later items), then fetched from the source's host, bounded. A fetch that fails
// stops the run at this item, which the next run reads again.
func (y *Syncer) item(ctx context.Context, raw []byte, actor string) ([]byte, error) {
	var iri string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &iri) != nil {
		return raw, nil
	}
	if err := activity.ValidateIRI(iri); err != nil || !sameOrigin(iri, actor) {
		return raw, nil // not a fetchable item of this source: parsing it skips it
	}
	body, err := y.s.client.Fetch(ctx, iri, y.s.cfg.MaxInboxBytes)
	if err != nil {
		return nil, fmt.Errorf("fetch activity %s: %w", iri, err)
	}
	return body, nil
}

// wanted is the filter of a source: from a followed domain's outbox, its own Creates and
// Announces; from a follower's inbox, our own Creates. An activity's id must be on its actor's
// host, as at the inbox.
func (y *Syncer) wanted(a *activity.Activity, actor, box string) bool {
	if !sameOrigin(a.ID, a.Actor) {
		return false
	}
	if box == "inbox" {
		return a.Type == activity.TypeCreate && a.Actor == y.s.actor
	}
	return (a.Type == activity.TypeCreate || a.Type == activity.TypeAnnounce) && a.Actor == actor
}

func (y *Syncer) queue(ctx context.Context, a *activity.Activity, body []byte, from string) (bool, error) {
	seq, inserted, err := y.s.st.ActivityInboxInsert(ctx, store.ActivityInboxInsertParams{
		ActivityID: a.ID, Actor: a.Actor, From: from, Type: string(a.Type), Body: body, Source: store.InboxSourceSync,
	})
	if err != nil {
		return false, err
	}
	if inserted {
		y.s.wake.inbox(strconv.FormatInt(seq, 10))
	}
	return inserted, nil
}

func (y *Syncer) lag(key string, n int) {
	y.s.m.syncLag.WithLabelValues(key).Set(float64(max(n, 0)))
}

func (y *Syncer) position(ctx context.Context, key string) (syncPosition, error) {
	var pos syncPosition
	raw, err := y.s.st.SyncPositionGet(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return pos, nil
	}
	if err != nil {
		return pos, err
	}
	if err := json.Unmarshal([]byte(raw), &pos); err != nil {
		// A position we cannot read is restarted from the beginning: repeats are no-ops.
		return syncPosition{}, nil
	}
	return pos, nil
}

func (y *Syncer) save(ctx context.Context, key string, pos syncPosition) error {
	b, _ := json.Marshal(pos)
	return y.s.st.SyncPositionSet(context.WithoutCancel(ctx), key, string(b))
}

// firstPage finds the first page of an actor's inbox or outbox.
func (y *Syncer) firstPage(ctx context.Context, actor, box string) (string, error) {
	a, err := y.s.client.Actor(ctx, actor)
	if err != nil {
		return "", err
	}
	coll := a.Outbox
	if box == "inbox" {
		coll = a.Inbox
	}
	if coll == "" || !sameOrigin(coll, actor) {
		return "", fmt.Errorf("actor %s has no %s on its own host", actor, box)
	}
	body, err := y.s.client.Fetch(ctx, coll, activity.MaxCollectionBytesDefault)
	if err != nil {
		return "", err
	}
	c, err := activity.ParseCollection(body)
	if err != nil {
		return "", err
	}
	if c.First == "" || !sameOrigin(c.First, actor) {
		return "", fmt.Errorf("%s of %s names no first page on its host", box, actor)
	}
	return c.First, nil
}

// syncPage is a collection page as the sync reads it. Its items are kept as sent, so that they
// are stored (and hashed) unchanged, and each is parsed on its own: one unreadable item is
// skipped, never a reason to stop reading the source.
type syncPage struct {
	Type         activity.Type     `json:"type"`
	TotalItems   int               `json:"totalItems"`
	Next         string            `json:"next"`
	Items        []json.RawMessage `json:"items"`
	OrderedItems []json.RawMessage `json:"orderedItems"`
}

func (p *syncPage) items() []json.RawMessage {
	if len(p.OrderedItems) > 0 {
		return p.OrderedItems
	}
	return p.Items
}

func readPage(body []byte) (*syncPage, error) {
	var p syncPage
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("read collection page: %w: %w", activity.ErrInvalid, err)
	}
	if p.Type != activity.TypeOrderedCollectionPage && p.Type != activity.TypeCollectionPage {
		return nil, fmt.Errorf("read collection page: %w: type %q is not a page", activity.ErrInvalid, p.Type)
	}
	if p.Next != "" {
		if err := activity.ValidateIRI(p.Next); err != nil {
			return nil, fmt.Errorf("read collection page: %w: next: %w", activity.ErrInvalid, err)
		}
	}
	return &p, nil
}

// sameOrigin reports whether u is on the scheme and host of actor.
func sameOrigin(u, actor string) bool {
	a, err1 := url.Parse(u)
	b, err2 := url.Parse(actor)
	return err1 == nil && err2 == nil && a.Scheme == b.Scheme && a.Host == b.Host
}
