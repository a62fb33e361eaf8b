package witness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
	"github.com/anchord/anchord/internal/vc"
	"github.com/anchord/anchord/internal/witnesslog"
)

const (
	logWitness   = "https://b.example/services/anchord"
	otherWitness = "https://c.example/services/anchord"
	logOrigin    = "b.example/log"
)

// peerDirectory is the proof monitor's view of other domains' logs in these tests: real Peers
// reading real logs over HTTP, by actor, each with the origin its domain advertises.
type peerDirectory map[string]struct {
	peer   *witnesslog.Peer
	origin string
}

func (d peerDirectory) PeerLog(_ context.Context, actor string) (*witnesslog.Peer, string, bool, error) {
	p, ok := d[actor]
	if !ok {
		return nil, "", false, nil
	}
	return p.peer, p.origin, true, nil
}

// testLog is a witness log in files whose read API is served as another domain would serve it.
type testLog struct {
	*witnesslog.Log
	pub ed25519.PublicKey
	srv *httptest.Server
}

func servedLog(t *testing.T) *testLog {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	ctx := anchordtest.Context(t, 30*time.Second)
	l, err := witnesslog.OpenPOSIX(ctx, witnesslog.Config{Origin: logOrigin, Key: key, CheckpointInterval: 100 * time.Millisecond,
		Logger: anchordtest.Logger(t), Registerer: prometheus.NewRegistry()}, filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, l.Close(cctx))
	})
	tl := &testLog{Log: l, pub: pub}
	tl.serve(t)
	return tl
}

// serve serves the log on a new server.
func (l *testLog) serve(t *testing.T) {
	mux := http.NewServeMux()
	l.Register(mux)
	l.srv = httptest.NewServer(mux)
	t.Cleanup(l.srv.Close)
}

// directory is a directory in which logWitness keeps l under origin.
func (l *testLog) directory(t *testing.T, origin string) peerDirectory {
	t.Helper()
	fetch, err := witnesslog.HTTPFetch(l.srv.Client(), l.srv.URL+"/log")
	require.NoError(t, err)
	p, err := witnesslog.NewPeer(logOrigin, l.pub, fetch)
	require.NoError(t, err)
	return peerDirectory{logWitness: {peer: p, origin: origin}}
}

// credentialJSON is an anchor credential as the origin stores it (members in any order).
func credentialJSON(n int) []byte {
	return fmt.Appendf(nil, `{"issuer":"did:web:a.example","@context":["https://www.w3.org/2018/credentials/v1"],
		"type":"VerifiableCredential","id":"https://a.example/vc/%d","issuanceDate":"2026-05-01T10:00:00Z",
		"credentialSubject":{"type":"AnchorLink","href":"hl:uEiA%d","anchor":"hl:uEiA%d","profile":"https://w3id.org/orb#v0","note":"<&>"}}`, n, n, n)
}

// pendingAnchor records one of our anchors waiting for proofs, witnessed by logWitness and
// otherWitness, and returns its seq.
func pendingAnchor(t *testing.T, st store.Store, n int) int64 {
	t.Helper()
	ctx := context.Background()
	a, err := st.AnchorInsert(ctx, store.AnchorInsertParams{AnchorString: fmt.Sprintf("1.cid%d", n), CoreIndexCID: fmt.Sprintf("cid%d", n),
		OpCount: 1, Backend: store.AnchorBackendWitness, Status: store.AnchorPending, Record: []byte("{}")})
	require.NoError(t, err)
	require.NoError(t, st.WitnessAnchorInsert(ctx, store.WitnessAnchor{Seq: a.Seq, VCID: fmt.Sprintf("https://a.example/vc/%d", n),
		Hashlink: fmt.Sprintf("hl:uEiA%d", n), Link: []byte("{}"), Credential: credentialJSON(n), OriginProof: []byte("{}")}, time.Hour))
	for _, w := range []string{logWitness, otherWitness} {
		require.NoError(t, st.AnchorWitnessUpsert(ctx, store.AnchorWitness{Seq: a.Seq, Actor: w, System: true, HasLog: true, Selected: true}))
	}
	return a.Seq
}

// promise records logWitness's proof of anchor seq with its promise of index.
func promise(t *testing.T, st store.Store, seq int64, index uint64, deadline time.Time) {
	t.Helper()
	ctx := context.Background()
	added, err := st.AnchorWitnessAddProof(ctx, seq, logWitness, proofAttachment(t, "did:web:b.example#key"))
	require.NoError(t, err)
	require.True(t, added)
	require.NoError(t, st.AnchorWitnessPromise(ctx, seq, logWitness, store.LogPromise{Origin: logOrigin, Index: int64(index), Deadline: deadline}))
}

// logged appends the entry of credential n to l, as the witness does before it signs.
func logged(t *testing.T, l *witnesslog.Log, n int) uint64 {
	t.Helper()
	c, err := vc.ParseCredential(credentialJSON(n))
	require.NoError(t, err)
	entry, err := LogEntry(c)
	require.NoError(t, err)
	i, err := l.Append(anchordtest.Context(t, 30*time.Second), entry)
	require.NoError(t, err)
	return i
}

func witnessRow(t *testing.T, st store.Store, seq int64, actor string) store.AnchorWitness {
	t.Helper()
	rows, err := st.AnchorWitnessList(context.Background(), seq)
	require.NoError(t, err)
	for _, r := range rows {
		if r.Actor == actor {
			return r
		}
	}
	t.Fatalf("no witness %s of anchor %d", actor, seq)
	return store.AnchorWitness{}
}

// TestLogPromisesAreVerifiedOrBroken: a kept promise is verified once and no longer watched; a
// promise whose index holds another entry is broken at once, one whose index no checkpoint
// covers only after its deadline; a broken proof stops counting and makes its pending anchor
// due for the status monitor; a log that cannot be read settles nothing.
func TestLogPromisesAreVerifiedOrBroken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		l := servedLog(t)
		reg := prometheus.NewRegistry()
		mon, err := NewLogProofs(LogProofConfig{MaxClockSkew: time.Second, Logger: anchordtest.Logger(t), Registerer: reg},
			st, l.directory(t, logOrigin), newOrigin(t, st).w)
		require.NoError(t, err)
		ctx := anchordtest.Context(t, time.Minute)
		deadline := time.Now().Add(time.Hour)

		kept, other, uncovered := pendingAnchor(t, st, 1), pendingAnchor(t, st, 2), pendingAnchor(t, st, 3)
		keptIdx := logged(t, l.Log, 1)
		wrongIdx := logged(t, l.Log, 99) // credential 2 promised where credential 99 is
		promise(t, st, kept, keptIdx, deadline)
		promise(t, st, other, wrongIdx, deadline)
		_, err = l.AwaitCheckpoint(ctx, wrongIdx)
		require.NoError(t, err)
		promise(t, st, uncovered, wrongIdx+1000, deadline)

		res, err := mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Verified: 1, Broken: 1, Waiting: 1}, res)
		require.NotNil(t, witnessRow(t, st, kept, logWitness).PromiseVerifiedAt)
		brokenRow := witnessRow(t, st, other, logWitness)
		require.NotNil(t, brokenRow.PromiseBrokenAt)
		require.False(t, brokenRow.ProofCounts())
		require.Equal(t, 1.0, testutil.ToFloat64(mon.settled.WithLabelValues("verified")))
		require.Equal(t, 1.0, testutil.ToFloat64(mon.settled.WithLabelValues("broken")))

		// The broken proof no longer satisfies a policy it satisfied; its anchor is due now.
		policy, err := Parse("OutOf(1,system) LogRequired")
		require.NoError(t, err)
		rows, err := st.AnchorWitnessList(ctx, other)
		require.NoError(t, err)
		require.False(t, policy.Evaluate(countable(witnessesOf(rows))))
		rows, err = st.AnchorWitnessList(ctx, kept)
		require.NoError(t, err)
		require.True(t, policy.Evaluate(countable(witnessesOf(rows))))
		due, err := st.WitnessAnchorsDue(ctx, 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		require.Equal(t, other, due[0].Seq)

		// A log that cannot be read settles nothing, even past the deadline.
		mon.now = func() time.Time { return deadline.Add(time.Minute) }
		l.srv.Close()
		res, err = mon.runOnce(ctx)
		require.Error(t, err)
		require.Equal(t, LogProofResult{Unreadable: 1}, res)
		require.Nil(t, witnessRow(t, st, uncovered, logWitness).PromiseBrokenAt)

		// Read again, past the deadline, the uncovered index breaks the promise.
		l.serve(t)
		mon.peers = l.directory(t, logOrigin)
		res, err = mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Broken: 1}, res)
		res, err = mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{}, res, "settled promises are no longer watched")

		broken, err := st.LogPromisesBroken(ctx)
		require.NoError(t, err)
		require.Equal(t, map[string]int64{logWitness: 2}, broken)
		require.Equal(t, 2.0, testutil.ToFloat64(mon.settled.WithLabelValues("broken")))
	})
}

// TestLogPromisesInALogNotTheWitnesss: a promise naming a log the witness does not keep (or
// none at all) waits for its deadline, then is broken.
func TestLogPromisesInALogNotTheWitnesss(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		l := servedLog(t)
		ctx := anchordtest.Context(t, time.Minute)
		deadline := time.Now().Add(time.Hour)
		elsewhere, none := pendingAnchor(t, st, 1), pendingAnchor(t, st, 2)
		promise(t, st, elsewhere, logged(t, l.Log, 1), deadline)
		_, err := l.AwaitCheckpoint(ctx, 0)
		require.NoError(t, err)

		// logWitness advertises another log than the one its receipt named.
		mon, err := NewLogProofs(LogProofConfig{Logger: anchordtest.Logger(t)}, st, l.directory(t, "b.example/other"), newOrigin(t, st).w)
		require.NoError(t, err)
		res, err := mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Waiting: 1}, res)
		mon.now = func() time.Time { return deadline.Add(2 * MaxClockSkewDefault) }
		res, err = mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Broken: 1}, res)

		// otherWitness keeps no log at all.
		added, err := st.AnchorWitnessAddProof(ctx, none, otherWitness, []byte(`{"proof":{}}`))
		require.NoError(t, err)
		require.True(t, added)
		require.NoError(t, st.AnchorWitnessPromise(ctx, none, otherWitness, store.LogPromise{Origin: "c.example/log", Index: 0, Deadline: deadline}))
		mon.now = time.Now
		res, err = mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Waiting: 1}, res)
		mon.now = func() time.Time { return deadline.Add(2 * MaxClockSkewDefault) }
		res, err = mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Broken: 1}, res)
		require.NotNil(t, witnessRow(t, st, none, otherWitness).PromiseBrokenAt)
	})
}

// The entry the origin recomputes from the credential it stored is the one the witness logged
// from the credential it was offered, whatever the order of members and with characters that
// encoding/json escapes.
func TestLogEntryIsTheCanonicalCredential(t *testing.T) {
	t.Parallel()
	stored, err := vc.ParseCredential(credentialJSON(7))
	require.NoError(t, err)
	offered, err := stored.MarshalJSON()
	require.NoError(t, err)
	signed, err := vc.ParseCredential(offered)
	require.NoError(t, err)
	a, err := LogEntry(stored)
	require.NoError(t, err)
	b, err := LogEntry(signed)
	require.NoError(t, err)
	require.Equal(t, string(a), string(b))
	require.Contains(t, string(a), `"note":"<&>"`, "JCS, not HTML-escaped")
	require.Less(t, strings.Index(string(a), `"@context"`), strings.Index(string(a), `"issuer"`), "members sorted")
}

// TestBrokenPromiseMakesTheStatusMonitorAskAnotherWitness: a pending anchor under
// "OutOf(1,system) LogRequired" holds B's proof, whose promise is broken. The anchor becomes
// due at once, the status monitor does not complete it on B's proof, and offers it to C, the
// other witness with a log; B's proof is left out of the credential.
func TestBrokenPromiseMakesTheStatusMonitorAskAnotherWitness(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := anchordtest.Context(t, time.Minute)
		l := servedLog(t)
		_, key, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		post := func(ctx context.Context, tx store.Executor, a *activity.Activity, _ ...string) (string, error) {
			a.ID = fmt.Sprintf("https://a.example/activities/%d", time.Now().UnixNano())
			body, err := json.Marshal(a)
			if err != nil {
				return "", err
			}
			_, err = tx.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{ActivityID: a.ID, Type: string(a.Type), Body: body, Recipients: a.To})
			return a.ID, err
		}
		refuse := func(string) (vc.ResolveKeyFunc, error) { return nil, errors.New("no proof is verified in this test") }
		requeue := func(context.Context, store.Executor, store.Anchor) error {
			return errors.New("no anchor fails in this test")
		}
		w, err := New(Config{Identity: Identity{ActorIRI: "https://a.example/services/anchord", Endpoint: "https://a.example",
			DID: "did:web:a.example", Key: key}, HasLog: func(string) bool { return true }, Logger: anchordtest.Logger(t)},
			st, post, refuse, requeue, nil)
		require.NoError(t, err)
		policy, err := Parse("OutOf(1,system) LogRequired")
		require.NoError(t, err)
		require.NoError(t, SavePolicy(ctx, st, policy))
		for _, actor := range []string{logWitness, otherWitness} {
			require.NoError(t, st.RelationshipUpsert(ctx, store.RelationshipUpsertParams{Kind: store.RelationshipWitness, Actor: actor,
				Status: store.RelationshipAccepted, ActivityID: "https://a.example/activities/invite-" + actor[8:9]}))
		}

		seq := pendingAnchor(t, st, 1)
		require.NoError(t, st.AnchorWitnessUpsert(ctx, store.AnchorWitness{Seq: seq, Actor: otherWitness, System: true, HasLog: true}))
		promise(t, st, seq, logged(t, l.Log, 99), time.Now().Add(time.Hour)) // B logged another credential there
		_, err = l.AwaitCheckpoint(ctx, 0)
		require.NoError(t, err)

		mon, err := NewLogProofs(LogProofConfig{Logger: anchordtest.Logger(t)}, st, l.directory(t, logOrigin), w)
		require.NoError(t, err)
		res, err := mon.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, LogProofResult{Broken: 1}, res)

		checked, err := w.runOnce(ctx)
		require.NoError(t, err)
		require.Equal(t, MonitorResult{Checked: 1, Reoffered: 1}, checked, "due at once, and not complete on B's proof")
		a, err := st.AnchorGet(ctx, seq)
		require.NoError(t, err)
		require.Equal(t, store.AnchorPending, a.Status)
		c := witnessRow(t, st, seq, otherWitness)
		require.True(t, c.Selected, "C is asked")
		require.NotEmpty(t, c.OfferID)
		offer, err := st.ActivityOutboxGet(ctx, c.OfferID)
		require.NoError(t, err)
		require.Contains(t, string(offer.Body), otherWitness)
		require.NotContains(t, string(offer.Body), logWitness, "B is not asked again")

		wa, err := st.WitnessAnchorGet(ctx, seq)
		require.NoError(t, err)
		wa.OriginProof = proofAttachment(t, "did:web:a.example#key")
		cred, err := Credential(ctx, st, wa)
		require.NoError(t, err)
		require.Len(t, cred.Proofs(), 1, "only the origin's proof: B's broken one is not carried")
	})
}

// proofAttachment is a proof by verificationMethod as a receipt carries it (not a signature:
// nothing verifies it in these tests).
func proofAttachment(t *testing.T, verificationMethod string) []byte {
	t.Helper()
	b, err := json.Marshal(vc.NewProofAttachment(vc.Proof{Type: "Ed25519Signature2020", Created: "2026-05-01T10:00:01Z",
		VerificationMethod: verificationMethod, ProofPurpose: "assertionMethod", ProofValue: "z3FXQ"}))
	require.NoError(t, err)
	return b
}

// quorumOf is a witness policy that only a checkpoint carrying the named cosignature meets.
type quorumOf string

func (q quorumOf) Satisfied(cp []byte) bool { return bytes.Contains(cp, []byte("— "+string(q)+" ")) }

// TestProofMonitorReadsOnlyCheckpointsWithTheQuorum: a witness's log whose checkpoint lacks the
// cosignatures the policy requires is not read at all: nothing is judged on it, neither
// verified nor broken, until a checkpoint the witnesses agree on is served.
func TestProofMonitorReadsOnlyCheckpointsWithTheQuorum(t *testing.T) {
	t.Parallel()
	ctx := anchordtest.Context(t, 30*time.Second)
	l := servedLog(t)
	idx, err := l.Append(ctx, []byte("entry"))
	require.NoError(t, err)
	_, err = l.AwaitCheckpoint(ctx, idx)
	require.NoError(t, err)

	dir := l.directory(t, logOrigin)
	ps := readPeer(ctx, dir, logWitness)
	require.NoError(t, ps.err)
	require.True(t, ps.ok)

	dir[logWitness].peer.WithQuorum(quorumOf("w.example/absent"))
	ps = readPeer(ctx, dir, logWitness)
	require.ErrorIs(t, ps.err, witnesslog.ErrNotCosigned)
	require.False(t, ps.ok)
}
