package federation

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

func follow(from, to *testDomain, id string) []byte {
	return []byte(fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"to":%q,"object":%q}`,
		from.actor()+"/activities/"+id, from.actor(), to.actor(), to.actor()))
}

func TestInboxRefusals(t *testing.T) {
	t.Parallel()
	a, m, victim := newDomain(t), newDomain(t), newDomain(t)
	require.NoError(t, a.svc.RegisterHandler(activity.TypeCreate, Handler{Authorize: a.svc.RequireFollowing, Handle: func(context.Context, Inbound) error { return nil }}))
	inbox := a.srv.URL + InboxPath()
	ctx := context.Background()
	count := func() int64 {
		rows, err := a.st.ActivityInboxList(ctx, store.ActivityPageParams{Limit: 1000})
		require.NoError(t, err)
		return int64(len(rows))
	}

	t.Run("Unsigned", func(t *testing.T) {
		req, _ := http.NewRequest("POST", inbox, strings.NewReader(string(follow(m, a, "u"))))
		status, body := send(t, req)
		require.Equal(t, http.StatusUnauthorized, status, body)
		require.Contains(t, body, `"code":"unauthorized"`)
	})
	t.Run("ActorIsNotTheSigner", func(t *testing.T) {
		status, body := send(t, m.signedRequest(t, "POST", inbox, follow(victim, a, "x")))
		require.Equal(t, http.StatusUnauthorized, status, body)
	})
	t.Run("KeyThatIsNotTheActors", func(t *testing.T) {
		// M signs with a key it says is the victim's; the victim's actor names its own key.
		req, _ := http.NewRequest("POST", inbox, strings.NewReader(string(follow(victim, a, "k"))))
		s, err := httpsig.NewSigner(httpsig.SignerConfig{KeyID: m.srv.URL + "/keys/stolen", PrivateKey: m.key})
		require.NoError(t, err)
		require.NoError(t, s.Sign(req))
		status, body := send(t, req)
		require.Equal(t, http.StatusUnauthorized, status, body)
	})
	t.Run("Replay", func(t *testing.T) {
		body := follow(m, a, "r")
		req := m.signedRequest(t, "POST", inbox, body)
		again, _ := http.NewRequest("POST", inbox, strings.NewReader(string(body)))
		again.Header = req.Header.Clone()
		status, msg := send(t, req)
		require.Equal(t, http.StatusOK, status, msg)
		status, msg = send(t, again)
		require.Equal(t, http.StatusUnauthorized, status, msg)
		require.Contains(t, msg, `"code":"unauthorized"`)
	})
	t.Run("NotAnActivity", func(t *testing.T) {
		status, body := send(t, m.signedRequest(t, "POST", inbox, []byte(`{"type":"Follow"`)))
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, body, "invalid_activity")
	})
	t.Run("FollowOfSomeoneElse", func(t *testing.T) {
		status, body := send(t, m.signedRequest(t, "POST", inbox, follow(m, victim, "o")))
		require.Equal(t, http.StatusBadRequest, status, body)
	})
	t.Run("CreateFromADomainWeDoNotFollow", func(t *testing.T) {
		create := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Create","actor":%q,"to":%q,"object":"https://x.example/o"}`,
			m.actor()+"/activities/c", m.actor(), a.actor())
		status, body := send(t, m.signedRequest(t, "POST", inbox, []byte(create)))
		require.Equal(t, http.StatusForbidden, status, body)
	})
	t.Run("UndoOfAnotherActorsFollow", func(t *testing.T) {
		undo := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Undo","actor":%q,"to":%q,"object":%s}`,
			m.actor()+"/activities/undo", m.actor(), a.actor(), follow(victim, a, "v"))
		status, body := send(t, m.signedRequest(t, "POST", inbox, []byte(undo)))
		require.Equal(t, http.StatusForbidden, status, body)
	})
	t.Run("IDOnAnotherDomainsHost", func(t *testing.T) {
		// M reuses an id of the victim's: taken, it would make the victim's own activity a
		// duplicate here.
		create := fmt.Sprintf(`{"@context":"https://www.w3.org/ns/activitystreams","id":%q,"type":"Follow","actor":%q,"to":%q,"object":%q}`,
			victim.actor()+"/activities/taken", m.actor(), a.actor(), a.actor())
		status, body := send(t, m.signedRequest(t, "POST", inbox, []byte(create)))
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, body, "not on its actor's host")
	})
	t.Run("TooLarge", func(t *testing.T) {
		big := follow(m, a, "big")
		big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", int(MaxInboxBytesDefault))+`"}`)...)
		status, body := send(t, m.signedRequest(t, "POST", inbox, big))
		require.Equal(t, http.StatusRequestEntityTooLarge, status, body)
	})
	t.Run("LargerThanItsType", func(t *testing.T) {
		// Well within the cap of an anchor's Create, far over a Follow's.
		big := follow(m, a, "big-follow")
		big = append(big[:len(big)-1], []byte(`,"pad":"`+strings.Repeat("x", int(MaxSmallInboxBytesDefault))+`"}`)...)
		status, body := send(t, m.signedRequest(t, "POST", inbox, big))
		require.Equal(t, http.StatusRequestEntityTooLarge, status, body)
		require.Contains(t, body, "a Follow activity is limited to 65536 bytes")
	})
	require.Equal(t, int64(1), count(), "only the first copy of the well-formed Follow was stored")

	t.Run("DuplicateIsANoOp", func(t *testing.T) {
		// The same activity again (a byte more, so that it is not a replay of the request).
		status, body := send(t, m.signedRequest(t, "POST", inbox, append(follow(m, a, "r"), ' ')))
		require.Equal(t, http.StatusOK, status, body)
		require.Equal(t, int64(1), count())
	})
}

func TestActorKeyAndDiscoveryDocuments(t *testing.T) {
	t.Parallel()
	a := newDomain(t)
	get := func(path string, hdr ...string) (int, string, string) {
		req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	_, ctype, body := get(ServicePath)
	require.Equal(t, activity.MediaTypeActivity, ctype)
	actor, err := activity.ParseActor([]byte(body))
	require.NoError(t, err)
	require.Equal(t, a.actor(), actor.ID)
	require.Equal(t, a.actor()+"/inbox", actor.Inbox)
	require.Equal(t, a.actor()+"/witnessing", actor.Witnessing)
	require.Equal(t, a.svc.KeyID(), actor.PublicKey.ID)
	require.True(t, strings.HasPrefix(actor.PublicKey.PublicKeyPem, "-----BEGIN Ed25519-----"), "Orb's PEM form")
	pub, err := httpsig.DecodePublicKeyPEM(actor.PublicKey.PublicKeyPem)
	require.NoError(t, err)
	require.Equal(t, a.key.Public().(ed25519.PublicKey), pub)

	_, _, body = get(ServicePath + activity.PathMainKey)
	require.JSONEq(t, fmt.Sprintf(`{"id":%q,"owner":%q,"publicKeyPem":%q}`, a.svc.KeyID(), a.actor(), actor.PublicKey.PublicKeyPem), body)

	hostMeta := fmt.Sprintf(`{"links":[{"rel":"self","type":"application/jrd+json","template":"%s/.well-known/webfinger?resource={uri}"},
		{"rel":"self","type":"application/activity+json","href":%q}]}`, a.srv.URL, a.actor())
	_, _, body = get("/.well-known/host-meta.json")
	require.JSONEq(t, hostMeta, body)
	_, _, body = get("/.well-known/host-meta", "Accept", "application/json")
	require.JSONEq(t, hostMeta, body)
	_, ctype, body = get("/.well-known/host-meta")
	require.Equal(t, mediaTypeXRD, ctype)
	require.Contains(t, body, `href="`+a.actor()+`"`)

	status, _, body := get("/.well-known/webfinger?resource=" + a.srv.URL)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `"href":"`+a.actor()+`"`)
	require.NotContains(t, body, "ledger-type", "no witness log: none advertised")
	status, _, _ = get("/.well-known/webfinger?resource=https://elsewhere.example")
	require.Equal(t, http.StatusNotFound, status)

	_, _, body = get(vc.WellKnownDIDPath)
	doc, err := vc.ParseDIDDocument([]byte(body))
	require.NoError(t, err)
	did, err := vc.DIDWeb(a.srv.URL)
	require.NoError(t, err)
	require.Equal(t, did, doc.ID)
	require.Contains(t, did, "%3A", "the port is percent-encoded")
	k, err := doc.AssertionKey(doc.VerificationMethod[0].ID)
	require.NoError(t, err)
	require.Equal(t, a.key.Public().(ed25519.PublicKey), k)
}

func TestCollections(t *testing.T) {
	t.Parallel()
	a, b, stranger := newDomain(t), newDomain(t), newDomain(t)
	ctx := context.Background()
	require.NoError(t, a.st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipFollower, Actor: b.actor(), Status: store.RelationshipAccepted}))
	// Five public activities and one private, pages of two.
	a.svc.cfg.PageSize = 2
	for i := range 5 {
		_, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeCreate, To: activity.Strings{activity.PublicIRI},
			Object: activity.IRIObject(fmt.Sprintf("https://x.example/%d", i))})
		require.NoError(t, err)
	}
	followID, err := a.svc.Post(ctx, &activity.Activity{Type: activity.TypeFollow, To: activity.Strings{b.actor()}, Object: activity.IRIObject(b.actor())})
	require.NoError(t, err)

	get := func(d *testDomain, path string) (int, *activity.Collection) {
		var req *http.Request
		if d == nil {
			req, _ = http.NewRequest("GET", a.srv.URL+path, nil)
		} else {
			req = d.signedRequest(t, "GET", a.srv.URL+path, nil)
		}
		status, body := send(t, req)
		if status != http.StatusOK {
			return status, nil
		}
		c, err := activity.ParseCollection([]byte(body))
		require.NoError(t, err, body)
		return status, c
	}
	status, sum := get(nil, ServicePath+"/outbox")
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, 5, sum.TotalItems, "the private Follow is not in the public outbox")
	require.Equal(t, a.actor()+"/outbox?page=true&page-num=2", sum.Last)
	_, p0 := get(nil, ServicePath+"/outbox?page=true")
	require.Len(t, p0.OrderedItems, 2)
	require.Equal(t, activity.TypeOrderedCollectionPage, p0.Type)
	require.Equal(t, "https://x.example/0", p0.OrderedItems[0].Activity.Object.IRI, "page 0 holds the oldest")
	require.Equal(t, a.actor()+"/outbox?page=true&page-num=1", p0.Next)
	_, p2 := get(nil, ServicePath+"/outbox?page=true&page-num=2")
	require.Len(t, p2.OrderedItems, 1)
	require.Empty(t, p2.Next)
	status, _ = get(nil, ServicePath+"/outbox?page=true&page-num=x")
	require.Equal(t, http.StatusBadRequest, status)

	status, _ = get(nil, ServicePath+"/followers")
	require.Equal(t, http.StatusUnauthorized, status, "unsigned")
	status, _ = get(stranger, ServicePath+"/followers")
	require.Equal(t, http.StatusForbidden, status, "signed by neither a follower nor a witness")
	_, f := get(b, ServicePath+"/followers?page=true")
	require.Equal(t, activity.TypeCollectionPage, f.Type)
	require.Equal(t, []string{b.actor()}, []string{f.Items[0].IRI})
	_, in := get(b, ServicePath+"/inbox")
	require.Zero(t, in.TotalItems)
	_, liked := get(b, ServicePath+"/liked")
	require.Equal(t, activity.TypeOrderedCollection, liked.Type)

	// One public activity by id; the private one is not served.
	status, body := send(t, mustRequest(t, p0.OrderedItems[0].Activity.ID))
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "https://x.example/0")
	ds, err := a.st.ActivityDeliveryListByActivity(ctx, p0.OrderedItems[0].Activity.ID)
	require.NoError(t, err)
	require.Empty(t, ds, "addressed to Public only: delivered to nobody")
	status, _ = send(t, mustRequest(t, followID))
	require.Equal(t, http.StatusNotFound, status, "a private activity is not served")
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	return req
}
