package federation

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
)

func TestFollowAcceptRoundTrip(t *testing.T) {
	t.Parallel()
	a, b := newDomain(t), newDomain(t)
	a.run(t)
	b.run(t)
	ctx := context.Background()

	v, err := b.svc.Follow(ctx, a.actor())
	require.NoError(t, err)
	require.Equal(t, store.RelationshipPending, v.Status)
	eventually(t, func() bool {
		return b.relationship(t, store.RelationshipFollowing, a.actor()).Status == store.RelationshipAccepted
	}, "B's follow of A was never accepted")
	ok, err := a.svc.IsFollower(ctx, b.actor())
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.svc.IsFollowing(ctx, a.actor())
	require.NoError(t, err)
	require.True(t, ok)
	followers, err := a.svc.Followers(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{b.actor()}, followers)

	// A's Accept embeds B's Follow, and only that.
	ds, err := a.st.ActivityOutboxListPublic(ctx, store.ActivityPageParams{Limit: 10})
	require.NoError(t, err)
	require.Empty(t, ds, "an Accept is not public")
	r := a.relationship(t, store.RelationshipFollower, b.actor())
	require.Equal(t, v.ActivityID, r.ActivityID)

	// Following again posts nothing new.
	again, err := b.svc.Follow(ctx, a.actor())
	require.NoError(t, err)
	require.Equal(t, v.ActivityID, again.ActivityID)

	// Unfollow: B's Undo removes B from A's followers.
	require.NoError(t, b.svc.Unfollow(ctx, a.actor()))
	require.ErrorIs(t, b.svc.Unfollow(ctx, a.actor()), ErrNotFollowing)
	eventually(t, func() bool {
		ok, err := a.svc.IsFollower(ctx, b.actor())
		return err == nil && !ok
	}, "B's Undo never removed it from A's followers")
}

func TestFollowUnderAcceptListIsRejectedUntilListed(t *testing.T) {
	t.Parallel()
	a := newDomain(t, func(c *Config) { c.FollowAuthPolicy = PolicyAcceptList })
	b := newDomain(t)
	a.run(t)
	b.run(t)
	ctx := context.Background()

	_, err := b.svc.Follow(ctx, a.actor())
	require.NoError(t, err)
	eventually(t, func() bool {
		return b.relationship(t, store.RelationshipFollowing, a.actor()).Status == store.RelationshipRejected
	}, "a Follow from an actor not on the accept list was never rejected")
	ok, err := a.svc.IsFollower(ctx, b.actor())
	require.NoError(t, err)
	require.False(t, ok)

	_, err = a.st.AcceptListInsert(ctx, store.AcceptListFollow, b.actor())
	require.NoError(t, err)
	_, err = b.svc.Follow(ctx, a.actor())
	require.NoError(t, err)
	eventually(t, func() bool {
		return b.relationship(t, store.RelationshipFollowing, a.actor()).Status == store.RelationshipAccepted
	}, "a listed actor's Follow was never accepted")
}

func TestInviteWitnessAccepted(t *testing.T) {
	t.Parallel()
	a, w := newDomain(t), newDomain(t)
	a.run(t)
	w.run(t)
	ctx := context.Background()
	// Under the default accept-list policy, W witnesses only for the domains it lists.
	_, err := w.st.AcceptListInsert(ctx, store.AcceptListInviteWitness, a.actor())
	require.NoError(t, err)
	v, err := a.svc.InviteWitness(ctx, w.actor())
	require.NoError(t, err)
	require.Equal(t, store.RelationshipPending, v.Status)
	eventually(t, func() bool {
		return a.relationship(t, store.RelationshipWitness, w.actor()).Status == store.RelationshipAccepted
	}, "the Invite was never accepted")
	require.Equal(t, store.RelationshipAccepted, w.relationship(t, store.RelationshipWitnessing, a.actor()).Status)
	witnesses, err := a.svc.Witnesses(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{w.actor()}, witnesses)
	witnessing, err := w.svc.Witnessing(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{a.actor()}, witnessing)
	ok, err := w.svc.IsWitnessing(ctx, a.actor())
	require.NoError(t, err)
	require.True(t, ok)

	require.NoError(t, a.svc.RemoveWitness(ctx, w.actor()))
	eventually(t, func() bool {
		ok, err := w.svc.IsWitnessing(ctx, a.actor())
		return err == nil && !ok
	}, "the withdrawn invitation never ended W's witnessing")
}

// TestInviteFromAnUnlistedDomainIsRejectedByDefault: the default invite policy is accept-list,
// so a domain nobody listed cannot make us its witness.
func TestInviteFromAnUnlistedDomainIsRejectedByDefault(t *testing.T) {
	t.Parallel()
	a, w := newDomain(t), newDomain(t)
	a.run(t)
	w.run(t)
	require.Equal(t, PolicyAcceptList, w.svc.cfg.InviteWitnessAuthPolicy)
	_, err := a.svc.InviteWitness(context.Background(), w.actor())
	require.NoError(t, err)
	eventually(t, func() bool {
		return a.relationship(t, store.RelationshipWitness, w.actor()).Status == store.RelationshipRejected
	}, "the Invite of an unlisted domain was never rejected")
	ok, err := w.svc.IsWitnessing(context.Background(), a.actor())
	require.NoError(t, err)
	require.False(t, ok)
}

func TestAcceptOfAFollowWeNeverSentChangesNothing(t *testing.T) {
	t.Parallel()
	a, b, m := newDomain(t), newDomain(t), newDomain(t)
	ctx := context.Background()
	inboxRows := func() int {
		rows, err := a.st.ActivityInboxList(ctx, store.ActivityPageParams{Limit: 100})
		require.NoError(t, err)
		return len(rows)
	}
	refused := func(accept activity.Activity, why string) {
		t.Helper()
		status, body := send(t, m.signedRequest(t, "POST", a.srv.URL+InboxPath(), mustJSON(t, accept)))
		require.Equal(t, 403, status, "%s: %s", why, body)
		var eb struct{ Code, Message string }
		require.NoError(t, json.Unmarshal([]byte(body), &eb))
		require.Equal(t, "forbidden", eb.Code)
		require.NotContains(t, eb.Message, m.actor(), "the answer quotes nothing of the request")
	}
	// M claims A asked to follow it.
	accept := activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams}, ID: m.actor() + "/activities/acc", Type: activity.TypeAccept,
		Actor: m.actor(), To: activity.Strings{a.actor()},
		Object: &activity.Object{Activity: &activity.Activity{
			ID: a.actor() + "/activities/never", Type: activity.TypeFollow, Actor: a.actor(), Object: activity.IRIObject(m.actor()),
		}},
	}
	refused(accept, "an Accept of a Follow not in our outbox")

	// A real Follow of A's, sent to B: M may not answer it.
	v, err := a.svc.Follow(ctx, b.actor())
	require.NoError(t, err)
	accept.ID += "2"
	accept.Object.Activity.ID, accept.Object.Activity.Object = v.ActivityID, activity.IRIObject(b.actor())
	refused(accept, "an Accept of a Follow sent to another domain")

	// An Accept of a Follow by someone else.
	accept.ID += "3"
	accept.Object.Activity.Actor = m.actor()
	refused(accept, "an Accept of a Follow that is not ours")
	require.Zero(t, inboxRows(), "nothing refused at the door is stored")
	require.Equal(t, store.RelationshipPending, a.relationship(t, store.RelationshipFollowing, b.actor()).Status)
	require.Empty(t, a.relationship(t, store.RelationshipFollowing, m.actor()).Status)
}

// TestRepeatedFollowsAreAnsweredOnce: a follower's Follow is answered, its repeats within the
// answer interval are recorded (the latest is the one its Undo must name) but not answered: a
// peer that posts Follows without end makes one Accept per interval, not one per Follow.
func TestRepeatedFollowsAreAnsweredOnce(t *testing.T) {
	t.Parallel()
	a, m := newDomain(t, func(c *Config) { c.AnswerInterval = time.Hour }), newDomain(t)
	// Only the processor runs: the Accepts stay in the outbox, one pending delivery each.
	proc := a.svc.Processor()
	proc.handled.Init(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = proc.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	accepts := func() int64 {
		c, err := a.st.ActivityCounts(context.Background())
		require.NoError(t, err)
		return c.DeliveriesPending
	}
	post := func(id string) {
		t.Helper()
		status, body := send(t, m.signedRequest(t, "POST", a.srv.URL+InboxPath(), follow(m, a, id)))
		require.Equal(t, 200, status, body)
		out := proc.handled.WaitOrTimeout(t, 10*time.Second)
		require.Equal(t, "done", out.Outcome, "%v", out.Err)
	}
	post("f0")
	require.Equal(t, int64(1), accepts(), "the first Follow is answered")
	for i := range 20 {
		post("f" + strconv.Itoa(i+1))
	}
	require.Equal(t, int64(1), accepts(), "no Accept for the repeats")
	r := a.relationship(t, store.RelationshipFollower, m.actor())
	require.Equal(t, store.RelationshipAccepted, r.Status)
	require.Equal(t, m.actor()+"/activities/f20", r.ActivityID, "the latest Follow is recorded")
	// (A repeat after the interval is answered again: the store's conformance suite shows it.)
}
