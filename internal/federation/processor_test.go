package federation

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/store"
)

// TestInboxHandlerFailureIsRetriedThenParkedThenRetriedByAnOperator: a handler that keeps
// failing is retried on the schedule, parked with a dead letter after the last attempt, does not
// hold back the activity behind it, and runs again when the dead letter is retried.
func TestInboxHandlerFailureIsRetriedThenParkedThenRetriedByAnOperator(t *testing.T) {
	t.Parallel()
	a, m := newDomain(t, fastRetries(3)), newDomain(t)
	var calls atomic.Int64
	var healed atomic.Bool
	require.NoError(t, a.svc.RegisterHandler(activity.TypeCreate, Handler{Handle: func(_ context.Context, in Inbound) error {
		if in.Activity.Object.IRI == "https://x.example/poison" && !healed.Load() {
			calls.Add(1)
			return errors.New("origin unreachable")
		}
		return nil
	}}))
	require.NoError(t, a.st.RelationshipUpsert(context.Background(), store.RelationshipUpsertParams{Kind: store.RelationshipFollowing, Actor: m.actor(), Status: store.RelationshipAccepted}))
	_, proc := a.run(t)
	post := func(id, object string) {
		create := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Create","actor":%q,"object":%q}`,
			m.actor()+"/activities/"+id, m.actor(), object)
		status, body := send(t, m.signedRequest(t, "POST", a.srv.URL+InboxPath(), []byte(create)))
		require.Equal(t, 200, status, body)
	}
	post("poison", "https://x.example/poison")
	post("fine", "https://x.example/fine")

	outcomes := map[string][]string{}
	for len(outcomes[m.actor()+"/activities/poison"]) < 3 || len(outcomes[m.actor()+"/activities/fine"]) < 1 {
		o := proc.handled.WaitOrTimeout(t, 10*time.Second)
		outcomes[o.ActivityID] = append(outcomes[o.ActivityID], o.Outcome)
	}
	require.Equal(t, []string{outcomeRetried, outcomeRetried, outcomeParked}, outcomes[m.actor()+"/activities/poison"])
	require.Equal(t, []string{"done"}, outcomes[m.actor()+"/activities/fine"], "the poison activity does not hold back the next")
	require.Equal(t, int64(3), calls.Load())
	require.Equal(t, 2.0, testutil.ToFloat64(a.svc.m.inbox.WithLabelValues("Create", "received")))
	require.Equal(t, 2.0, testutil.ToFloat64(a.svc.m.inbox.WithLabelValues("Create", "retried")))
	require.Equal(t, 1.0, testutil.ToFloat64(a.svc.m.inbox.WithLabelValues("Create", "parked")))

	ctx := context.Background()
	dls, err := a.st.DeadLetterList(ctx, store.DeadLetterListParams{Kind: store.DeadLetterActivity, Limit: 10})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	d := dls[0]
	require.Equal(t, 3, d.Attempts)
	require.Len(t, d.History, 3)
	require.Contains(t, d.Reason, "origin unreachable")
	row, err := a.st.ActivityInboxGetByActivity(ctx, m.actor()+"/activities/poison")
	require.NoError(t, err)
	require.Equal(t, store.InboxParked, row.Status)
	require.Equal(t, fmt.Sprintf("inbox/%d", row.Seq), d.Ref)

	// The operator retries once the origin is back: the row runs again, in the transaction that
	// deletes the dead letter.
	healed.Store(true)
	require.NoError(t, a.st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := a.svc.RetryDeadLetter(ctx, tx, d); err != nil {
			return err
		}
		return tx.DeadLetterDelete(ctx, d.ID)
	}))
	o := proc.handled.WaitOrTimeout(t, 10*time.Second)
	require.Equal(t, "done", o.Outcome)
	require.Equal(t, row.Seq, o.Seq)
	require.Error(t, a.svc.RetryDeadLetter(ctx, a.st, d), "a row that is not parked is not re-queued")
}

func TestPermanentHandlerErrorsParkAtOnce(t *testing.T) {
	t.Parallel()
	a, m := newDomain(t, fastRetries(5)), newDomain(t)
	require.NoError(t, a.svc.RegisterHandler(activity.TypeAnnounce, Handler{Handle: func(context.Context, Inbound) error {
		return Permanent(errors.New("not an anchor"))
	}}))
	_, proc := a.run(t)
	announce := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Announce","actor":%q,"object":"https://x.example/a"}`,
		m.actor()+"/activities/1", m.actor())
	status, body := send(t, m.signedRequest(t, "POST", a.srv.URL+InboxPath(), []byte(announce)))
	require.Equal(t, 200, status, body)
	o := proc.handled.WaitOrTimeout(t, 10*time.Second)
	require.Equal(t, outcomeParked, o.Outcome)
}

func TestRegisterHandler(t *testing.T) {
	t.Parallel()
	a := newDomain(t)
	h := Handler{Handle: func(context.Context, Inbound) error { return nil }}
	require.NoError(t, a.svc.RegisterHandler(activity.TypeCreate, h))
	require.ErrorContains(t, a.svc.RegisterHandler(activity.TypeCreate, h), "already")
	require.ErrorContains(t, a.svc.RegisterHandler(activity.TypeFollow, h), "already", "built-ins are registered")
	require.ErrorContains(t, a.svc.RegisterHandler("Nonsense", h), "not an activity type")
	require.ErrorContains(t, a.svc.RegisterHandler(activity.TypeLike, Handler{}), "no Handle")
	a.svc.Processor()
	require.ErrorContains(t, a.svc.RegisterHandler(activity.TypeAnnounce, h), "already runs")
}

// TestAnswersOfOtherActivitiesGoToTheirHandler: an Accept of our Offer reaches the handler
// registered for Offer answers; an Accept of an Offer that is not ours is refused (403), and
// one of a type nobody handles is refused (400).
func TestAnswersOfOtherActivitiesGoToTheirHandler(t *testing.T) {
	t.Parallel()
	a, w := newDomain(t), newDomain(t)
	got := make(chan Inbound, 1)
	require.NoError(t, a.svc.RegisterAnswerHandler(activity.TypeOffer, Handler{Handle: func(_ context.Context, in Inbound) error {
		got <- in
		return nil
	}}))
	require.Error(t, a.svc.RegisterAnswerHandler(activity.TypeFollow, Handler{Handle: func(context.Context, Inbound) error { return nil }}))
	a.run(t)
	// What W answers must be ours and sent to W.
	ctx := context.Background()
	offerID, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeOffer, To: activity.Strings{w.actor()}, Object: activity.IRIObject("https://x.example/anchor")})
	require.NoError(t, err)
	likeID, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeLike, To: activity.Strings{w.actor()}, Object: activity.IRIObject("https://x.example/anchor")})
	require.NoError(t, err)
	accept := func(id, offerActor string, offerType activity.Type) []byte {
		answered := offerID
		if offerType != activity.TypeOffer {
			answered = likeID
		}
		return []byte(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Accept","actor":%q,"to":%q,
			"object":{"id":%q,"type":%q,"actor":%q,"object":"https://x.example/anchor"}}`,
			w.actor()+"/activities/"+id, w.actor(), a.actor(), answered, offerType, offerActor))
	}
	status, body := send(t, w.signedRequest(t, "POST", a.srv.URL+InboxPath(), accept("1", a.actor(), activity.TypeOffer)))
	require.Equal(t, 200, status, body)
	select {
	case in := <-got:
		require.Equal(t, w.actor(), in.Actor)
		require.Equal(t, activity.TypeOffer, in.Activity.Object.Activity.Type)
	case <-time.After(10 * time.Second):
		t.Fatal("the Offer's Accept never reached its handler")
	}
	status, body = send(t, w.signedRequest(t, "POST", a.srv.URL+InboxPath(), accept("2", w.actor(), activity.TypeOffer)))
	require.Equal(t, 403, status, body)
	status, body = send(t, w.signedRequest(t, "POST", a.srv.URL+InboxPath(), accept("3", a.actor(), activity.TypeLike)))
	require.Equal(t, 400, status, body)
}
