package main

// Resolution from a DID's anchor origin between a real Orb domain and anchord domains in the
// did:orb profile, both ways.

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// TestOrbResolvesFromAnAnchordOrigin: a real Orb domain with RESOLVE_FROM_ANCHOR_ORIGIN=true
// follows an anchord domain that lists its DIDs' operations. An update the anchord domain
// accepted and has not anchored shows at Orb: Orb found anchord's resolution endpoint through
// /.well-known/did-orb and WebFinger, read anchord's answer and its unpublished operations,
// applied the update and found the document, commitments, anchor origin and canonicalId equal
// to anchord's, as its rules require.
func TestOrbResolvesFromAnAnchordOrigin(t *testing.T) {
	orb := startOrb(t, "RESOLVE_FROM_ANCHOR_ORIGIN=true")
	d := startOrbPeer(t, "anchord", append(originFlags, heldBack...)...)
	orbFollows(t, d)
	mark := orb.mark()

	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://127.0.0.2"})
	ids, names := originDIDs(t, d, w)
	for _, name := range names {
		anchordtest.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
			r := resolveAtOrb(t, name)
			return r.status == http.StatusOK && r.published && r.canonical == name
		}, "Orb holds %s", name)
	}

	postUpdate(t, d, w, ids[0], "pending")
	ours := resolveOrb(t, d, names[0])
	require.Contains(t, ours.document, "#pending")
	require.Empty(t, ours.version, "not anchored yet")
	theirs := resolveAtOrb(t, names[0])
	require.Equal(t, http.StatusOK, theirs.status)
	require.Equal(t, names[0], theirs.canonical)
	doc, err := json.Marshal(theirs.document)
	require.NoError(t, err)
	require.Contains(t, string(doc), "https://example.org/pending", "Orb merged the update anchord has not anchored")
	require.Equal(t, withoutID(t, decodeDocument(t, ours.document)), withoutID(t, theirs.document))
	require.Empty(t, orb.problemsSince(mark), "Orb logged no warning or error")
}

// TestAnchordResolvesFromAnOrbOrigin: an anchord domain with --resolve-from-anchor-origin follows
// a real Orb domain that keeps unpublished operations and lists them
// (UNPUBLISHED_OPERATION_STORE_ENABLED, INCLUDE_UNPUBLISHED_OPERATIONS_IN_METADATA) and cuts its
// batches every 15 s. An update Orb accepted shows at anchord before Orb anchors it, with the
// document Orb answers; once anchored and delivered, anchord answers Orb's version of it.
func TestAnchordResolvesFromAnOrbOrigin(t *testing.T) {
	startOrb(t, "UNPUBLISHED_OPERATION_STORE_ENABLED=true", "INCLUDE_UNPUBLISHED_OPERATIONS_IN_METADATA=true",
		"INCLUDE_PUBLISHED_OPERATIONS_IN_METADATA=true", "BATCH_WRITER_TIMEOUT=15000")
	d := startDomain(t, "anchord", "--did-method", "orb", "--resolve-from-anchor-origin")
	d.follow(&relayDomain{t: t, name: "Orb", actor: orbActor})

	w := wallet.New(wallet.Config{Profile: sidetree.OrbProfile(""), AnchorOrigin: "http://127.0.0.1"})
	id, create, err := w.Create(wallet.AddServices(wallet.Service{ID: "home", Type: "LinkedDomains", Endpoint: "https://example.com"}))
	require.NoError(t, err)
	orbAPI := newClient(orbAddr)
	code, body, err := orbAPI.post(create)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	var created orbResult
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		created = orbResolve(t, "did:orb:uAAA:"+id.Suffix)
		return created.status == http.StatusOK && created.canonical != ""
	}, "Orb anchored the create")
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return resolveOrb(t, d, created.canonical).canonical == created.canonical
	}, "anchord holds it")

	update, err := w.Update(id, wallet.AddServices(wallet.Service{ID: "pending", Type: "LinkedDomains", Endpoint: "https://example.org/pending"}))
	require.NoError(t, err)
	accepted := time.Now()
	code, body, err = orbAPI.post(update)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	atOrb := orbResolve(t, created.canonical)
	require.Contains(t, atOrb.document, "https://example.org/pending", "Orb shows the update it keeps unpublished")
	got := resolveOrb(t, d, created.canonical)
	require.Less(t, time.Since(accepted), 10*time.Second, "still within Orb's batch timeout: the update is not anchored")
	require.Equal(t, atOrb, got, "anchord answers what Orb answers")
	require.Positive(t, d.api.metric(t, `anchord_origin_resolutions_total{outcome="merged"}`))

	anchordtest.Eventually(t, time.Minute, 500*time.Millisecond, func() bool {
		r := orbResolve(t, created.canonical)
		return r.version != "" && r.version != created.version
	}, "Orb anchors the update")
	anchordtest.Eventually(t, time.Minute, 200*time.Millisecond, func() bool {
		return reflect.DeepEqual(resolveOrb(t, d, created.canonical), orbResolve(t, created.canonical))
	}, "anchord answers Orb's version of it")
}

// decodeDocument parses a document orbResult keeps as text (its own id replaced by <id>).
func decodeDocument(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(doc, "<id>", "did:orb:x")), &m))
	return m
}
