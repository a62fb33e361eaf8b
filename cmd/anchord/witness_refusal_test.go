package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/store/sqlitestore"
)

// postStatus posts one activity to a domain's inbox signed as from, as from's deliverer would,
// and returns the HTTP status of the answer.
func postStatus(t *testing.T, from *relayDomain, key ed25519.PrivateKey, to *relayDomain, body []byte) int {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	defer st.Close()
	client, err := peer.New(peer.Config{KeyID: from.actor + "/keys/main-key", PrivateKey: key, HTTP: loopbackPeers(t)}, st)
	require.NoError(t, err)
	defer client.Close()
	err = client.Post(context.Background(), to.actor+"/inbox", body)
	var se *peer.StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	require.NoError(t, err)
	return http.StatusOK
}

// offersOf returns the Offers in a domain's public outbox.
func offersOf(t *testing.T, d *relayDomain, typ activity.Type) []*activity.Activity {
	t.Helper()
	var out []*activity.Activity
	for _, raw := range d.outboxItems() {
		a, err := activity.Parse(raw)
		require.NoError(t, err)
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

// TestWitnessRefusesOffersAtItsInbox: B witnesses for A only. An Offer from Z, which never
// invited B, is refused at B's inbox with 403; malformed Offers from A are refused with 400 or
// taken and parked as dead letters of kind activity. None is answered, and no answer is a 5xx.
func TestWitnessRefusesOffersAtItsInbox(t *testing.T) {
	t.Parallel()
	keyFileA, keyA := writeKeyFile(t)
	keyFileZ, keyZ := writeKeyFile(t)
	a := startDomain(t, "A", append([]string{"--key-file", keyFileA}, witnessTiming...)...)
	b := startDomain(t, "B")
	z := startDomain(t, "Z", "--key-file", keyFileZ)
	a.invite(b)

	// A real Offer of A's, to shape the others from; B answers it.
	load := newFedLoad(t, a.api)
	load.creates(1, 1)
	var offer *activity.Activity
	anchordtest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		offers := offersOf(t, a, activity.TypeOffer)
		if len(offers) > 0 {
			offer = offers[0]
		}
		return offer != nil
	}, "A offers its anchor")
	anchordtest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
		return answered(t, b, offer.ID)
	}, "B answers A's Offer")

	reshape := func(actor, id string, change func(o *activity.Activity)) []byte {
		t.Helper()
		body, err := json.Marshal(offer)
		require.NoError(t, err)
		cp, err := activity.Parse(body)
		require.NoError(t, err)
		cp.Actor, cp.ID = actor, id
		change(cp)
		body, err = json.Marshal(cp)
		require.NoError(t, err)
		return body
	}

	// From a domain B never accepted an Invite of: 403, and nothing is taken.
	fromZ := reshape(z.actor, z.actor+"/activities/offer-uninvited", func(*activity.Activity) {})
	require.Equal(t, http.StatusForbidden, postStatus(t, z, keyZ, b, fromZ))
	refusedBefore := witnessMetric(t, b, `anchord_witness_offers_received_total{outcome="refused"}`)
	require.GreaterOrEqual(t, refusedBefore, 1.0)

	// Malformed Offers from A, which B witnesses for.
	otherAnchor := activity.NewHashlink([]byte("not the original"))
	bad := []struct {
		name   string
		change func(o *activity.Activity)
	}{
		{"no-end-time", func(o *activity.Activity) { o.EndTime = nil }},
		{"expired", func(o *activity.Activity) {
			start, end := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour)
			o.StartTime, o.EndTime = &start, &end
		}},
		{"wrong-target", func(o *activity.Activity) { o.Target = activity.IRIObject(a.actor) }},
		{"anchor-not-the-hash-of-its-original", func(o *activity.Activity) { o.Object.Linkset.Linkset[0].Anchor = otherAnchor }},
		{"replies-not-ld-json", func(o *activity.Activity) { o.Object.Linkset.Linkset[0].Replies[0].Type = "text/plain" }},
	}
	var parked []string
	for _, tt := range bad {
		id := a.actor + "/activities/offer-" + tt.name
		status := postStatus(t, a, keyA, b, reshape(a.actor, id, tt.change))
		require.Less(t, status, 500, "%s: never a 5xx", tt.name)
		require.Contains(t, []int{http.StatusOK, http.StatusBadRequest}, status, tt.name)
		t.Logf("malformed Offer %s: %d", tt.name, status)
		if status == http.StatusOK {
			parked = append(parked, id)
		}
	}
	for _, id := range parked {
		anchordtest.Eventually(t, 30*time.Second, 100*time.Millisecond, func() bool {
			return deadLetterOf(t, b, id)
		}, "the Offer %s is parked at B", id)
	}
	require.GreaterOrEqual(t, witnessMetric(t, b, `anchord_witness_offers_received_total{outcome="refused"}`), refusedBefore+float64(len(parked)))

	// None of the refused Offers was answered; the real one was, once.
	require.False(t, answered(t, b, z.actor+"/activities/offer-uninvited"))
	for _, tt := range bad {
		require.False(t, answered(t, b, a.actor+"/activities/offer-"+tt.name), tt.name)
	}
	n := 0
	for _, acc := range offersOf(t, b, activity.TypeAccept) {
		if acc.Object != nil && acc.Object.Activity != nil && acc.Object.Activity.ID == offer.ID {
			n++
		}
	}
	require.Equal(t, 1, n, "A's real Offer answered once")
}

// answered reports whether d's outbox holds an Accept of Offer id.
func answered(t *testing.T, d *relayDomain, id string) bool {
	t.Helper()
	for _, acc := range offersOf(t, d, activity.TypeAccept) {
		if acc.Object != nil && acc.Object.Activity != nil && acc.Object.Activity.ID == id {
			return true
		}
	}
	return false
}

// deadLetterOf reports whether d parked the inbox activity id as a dead letter of kind activity.
func deadLetterOf(t *testing.T, d *relayDomain, id string) bool {
	t.Helper()
	var page httpapi.DeadLetterPage
	require.NoError(t, json.Unmarshal([]byte(d.admin("dead-letters", "list", "--json")), &page))
	for _, dl := range page.DeadLetters {
		if dl.Kind == "activity" && bytes.Contains(dl.Payload, []byte(id)) {
			return true
		}
	}
	return false
}
