package sidetree_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// historyGen builds random operation histories of one DID: every operation type, signed with
// keys drawn from small pools so that commitments are reused, forks compete, operations open
// commitments that come up only later or never, signatures fail, and some requests are of
// another DID or no operation at all.
type historyGen struct {
	t        *testing.T
	rng      *rand.Rand
	update   []*wallet.Key
	recovery []*wallet.Key
	jwk      []byte
	suffix   string
	create   []byte
	other    []byte // a create of another DID
}

func newHistoryGen(t *testing.T, rng *rand.Rand, update, recovery []*wallet.Key) *historyGen {
	t.Helper()
	g := &historyGen{t: t, rng: rng, update: update, recovery: recovery, jwk: update[0].PublicJWK()}
	var err error
	g.create, g.suffix, err = wallet.CreateRequest(recovery[0].Commitment(), update[0].Commitment(), g.patches()...)
	require.NoError(t, err)
	g.other, _, err = wallet.CreateRequest(recovery[1].Commitment(), update[1].Commitment(), g.patches()...)
	require.NoError(t, err)
	return g
}

func (g *historyGen) pick(keys []*wallet.Key) *wallet.Key { return keys[g.rng.IntN(len(keys))] }

// patches returns zero to three random patches over a few ids, so that entries are replaced,
// removed and added again.
func (g *historyGen) patches() []wallet.Patch {
	var out []wallet.Patch
	for range g.rng.IntN(4) {
		id := fmt.Sprintf("e%d", g.rng.IntN(3))
		switch g.rng.IntN(6) {
		case 0:
			out = append(out, wallet.AddServices(wallet.Service{ID: id, Type: "LinkedDomains", Endpoint: "https://" + id + ".example"}))
		case 1:
			out = append(out, wallet.AddServices(wallet.Service{ID: id, Type: "Hub", Endpoint: map[string]any{"origins": []string{"https://a.example"}}}))
		case 2:
			out = append(out, wallet.RemoveServices(id))
		case 3:
			purposes := [][]string{nil, {}, {"authentication"}, {"keyAgreement", "assertionMethod"}}[g.rng.IntN(4)]
			// A JWK of a template, of none (members in another order, a value not in canonical
			// base64url, one more member), or of a template's start.
			jwk := [][]byte{g.jwk, []byte(`{"x":"abc","kty":"EC"}`), []byte(`{"kty":"OKP","crv":"Ed25519","x":"abd"}`),
				[]byte(`{"kty":"OKP","crv":"Ed25519","x":"AAAA","kid":"k"}`), []byte(`{"kty":"OKP","crv":"Ed25519","x":"AAAA"}`)}[g.rng.IntN(5)]
			out = append(out, wallet.AddPublicKeys(wallet.PublicKey{ID: id, Type: []string{"JsonWebKey2020", "EcdsaSecp256k1VerificationKey2019", "SomeOtherType"}[g.rng.IntN(3)], PublicKeyJWK: jwk, Purposes: purposes}))
		case 4:
			out = append(out, wallet.RemovePublicKeys(id))
		case 5:
			out = append(out, wallet.Replace(wallet.Document{Services: []wallet.Service{{ID: id, Type: "T", Endpoint: "https://r.example"}}}))
		}
	}
	return out
}

// request returns a random request for the DID (or, rarely, something else).
func (g *historyGen) request() []byte {
	t := g.t
	switch n := g.rng.IntN(100); {
	case n < 50:
		req, err := wallet.UpdateRequest(g.suffix, g.pick(g.update), g.pick(g.update).Commitment(), g.patches()...)
		require.NoError(t, err)
		if g.rng.IntN(10) == 0 {
			req = withSignatureBy(t, req)
		}
		return req
	case n < 70:
		req, err := wallet.RecoverRequest(g.suffix, g.pick(g.recovery), g.pick(g.recovery).Commitment(), g.pick(g.update).Commitment(), g.patches()...)
		require.NoError(t, err)
		if g.rng.IntN(10) == 0 {
			req = withSignatureBy(t, req)
		}
		return req
	case n < 80:
		req, err := wallet.DeactivateRequest(g.suffix, g.pick(g.recovery))
		require.NoError(t, err)
		return req
	case n < 88:
		return g.create
	case n < 94:
		return g.other
	default:
		return []byte(`{"type":"update","didSuffix":"not a request"}`)
	}
}

// history returns n operations of the DID after its create (which comes first in the list
// unless shuffle moves it), anchored mostly in order: some share an anchor, some are anchored
// before operations already listed (a ledger's late completion), and some come from another
// domain.
func (g *historyGen) history(n int) []sidetree.AnchoredOperation {
	seq := uint64(10)
	ops := []sidetree.AnchoredOperation{{Sequence: seq, Position: 0, Request: g.create}}
	for range n {
		op := sidetree.AnchoredOperation{Request: g.request()}
		switch r := g.rng.IntN(10); {
		case r == 0:
			op.Sequence, op.Position = seq, 1+g.rng.IntN(1000) // the previous anchor, possibly a position taken
		case r == 1:
			op.Sequence, op.Position = uint64(1+g.rng.IntN(int(seq))), 1000+g.rng.IntN(1000) // late
		default:
			seq += uint64(1 + g.rng.IntN(3))
			op.Sequence, op.Position = seq, g.rng.IntN(5)
		}
		if g.rng.IntN(5) == 0 {
			op.Origin = "https://other.example/services/orb"
		}
		ops = append(ops, op)
	}
	for i := range ops {
		ops[i].Time = anchorTime(ops[i].Sequence)
	}
	if g.rng.IntN(4) == 0 {
		g.rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	}
	// One operation per position, as the index holds them.
	seen := map[sidetree.Position]bool{}
	out := ops[:0]
	for _, op := range ops {
		if p := (sidetree.Position{Sequence: op.Sequence, Index: op.Position}); !seen[p] {
			seen[p] = true
			out = append(out, op)
		}
	}
	return out
}

// anchorTime is the second in which anchor seq of a generated history was issued: anchors two
// apart share a second, as Orb's can, and every seventh anchor's time is not known (some of
// them before 1970, which counts as not known).
func anchorTime(seq uint64) int64 {
	if seq%7 == 0 {
		return -int64(seq % 2)
	}
	return 1_800_000_000 + int64(seq/2)
}

func testKeys(t *testing.T, n int) []*wallet.Key {
	t.Helper()
	keys := make([]*wallet.Key, n)
	for i := range keys {
		k, err := wallet.GenerateKey(sidetree.ES256K, nil)
		require.NoError(t, err)
		keys[i] = k
	}
	return keys
}

// profiles are the profiles whose parse and rendering the records are checked under, with the
// name of a DID of each.
var profiles = []struct {
	name    string
	profile sidetree.Profile
	did     func(suffix string) string
}{
	{"sidetree", sidetree.DefaultProfile(), func(s string) string { return "did:sidetree:" + s }},
	{"ion", sidetree.Profile{Method: "ion"}, func(s string) string { return "did:ion:" + s }},
	{"orb", sidetree.OrbProfile("https:anchord.example.com"), func(s string) string { return "did:orb:uAAA:" + s }},
}

// TestStateRecordMatchesResolve indexes random histories one operation at a time, as the
// observer does: each record comes from the previous one by Next, or from the whole history by
// ResolveRecord where Next declines, and must equal the record of the whole history; its state
// must be Resolve's, survive its binary form, and render byte for byte as Resolve's state under
// every profile.
func TestStateRecordMatchesResolve(t *testing.T) {
	t.Parallel()
	histories := 150
	if testing.Short() {
		histories = 30
	}
	update, recovery := testKeys(t, 4), testKeys(t, 3)
	for _, pc := range profiles {
		t.Run(pc.name, func(t *testing.T) {
			t.Parallel()
			seed := rand.Uint64()
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 0))
			p := pc.profile
			var declined, steps, found int
			for range histories {
				g := newHistoryGen(t, rng, update, recovery)
				ops := g.history(rng.IntN(16))
				var rec *sidetree.StateRecord
				for i, op := range ops {
					if rng.IntN(2) == 0 {
						// The batch writer's parse at intake, where intake accepts the request.
						if parsed, err := sidetree.ParseOperation(op.Request, p); err == nil {
							op.Parsed = parsed
						}
					}
					next, ok := rec.Next(p, g.suffix, op)
					steps++
					if !ok {
						declined++
						next = sidetree.ResolveRecord(p, g.suffix, ops[:i+1])
					}
					want := sidetree.ResolveRecord(p, g.suffix, ops[:i+1])
					require.Equal(t, want, next, "after %d of %s", i+1, describe(ops))
					require.Equal(t, sidetree.Resolve(p, g.suffix, ops[:i+1]), next.State)
					again, ok := next.Next(p, g.suffix, op)
					require.True(t, ok)
					require.Same(t, next, again, "an operation indexed again changes nothing")

					decoded, err := sidetree.DecodeStateRecord(g.suffix, next.AppendBinary(nil))
					require.NoError(t, err)
					require.Equal(t, next, decoded)
					if next.State != nil {
						found++
						did, err := sidetree.ParseDID(p, pc.did(g.suffix))
						require.NoError(t, err)
						wantBody, wantStatus := sidetree.RenderResolution(did, sidetree.Resolve(p, g.suffix, ops[:i+1]))
						body, status := sidetree.RenderResolution(did, decoded.State)
						require.Equal(t, string(wantBody), string(body))
						require.Equal(t, wantStatus, status)
						// The resolver's cache renders into a buffer it reuses.
						appended, status := sidetree.AppendResolution(append(make([]byte, 0, 16), "kept"...), did, decoded.State)
						require.Equal(t, "kept"+string(wantBody), string(appended))
						require.Equal(t, wantStatus, status)
					}
					rec = next
				}
			}
			t.Logf("%d steps, %d declined, %d with a state", steps, declined, found)
			require.Positive(t, found)
			require.Less(t, declined, steps/2, "most operations extend the record")
		})
	}
}

// TestStateRecordNextOfTheLoadGenerator: the operations a DID takes in the usual order (a create,
// updates, a recover, more updates) never need the history again, except a deactivate after
// updates.
func TestStateRecordNextOfTheLoadGenerator(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	d, create := newDID(t, service("a"))
	reqs := [][]byte{create, d.update(t, service("b")), d.update(t, service("c")), d.recover(t, service("r")), d.update(t, service("d"))}
	var rec *sidetree.StateRecord
	for i, req := range reqs {
		next, ok := rec.Next(p, d.id.Suffix, sidetree.AnchoredOperation{Sequence: uint64(i + 1), Request: req})
		require.True(t, ok, "operation %d", i)
		rec = next
	}
	require.Equal(t, sidetree.ResolveRecord(p, d.id.Suffix, history(reqs...)), rec)
	require.Equal(t, []string{"r", "d"}, serviceIDs(rec.State))

	_, ok := rec.Next(p, d.id.Suffix, sidetree.AnchoredOperation{Sequence: 9, Request: d.deactivate(t)})
	require.False(t, ok, "the document to keep is the recover's")
	_, ok = rec.Next(p, d.id.Suffix, sidetree.AnchoredOperation{Sequence: 2, Position: 1, Request: d.update(t)})
	require.False(t, ok, "anchored before the last operation")
}

func TestDecodeStateRecordRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	d, create := newDID(t, service("a"))
	rec := sidetree.ResolveRecord(p, d.id.Suffix, history(create, d.update(t, service("b"))))
	b := rec.AppendBinary(nil)
	for n := range len(b) {
		_, err := sidetree.DecodeStateRecord(d.id.Suffix, b[:n])
		require.ErrorIs(t, err, sidetree.ErrStateRecord, "truncated to %d bytes", n)
	}
	_, err := sidetree.DecodeStateRecord(d.id.Suffix, append(b, 0))
	require.ErrorIs(t, err, sidetree.ErrStateRecord, "a byte too many")
	other := append([]byte{3}, b[1:]...)
	_, err = sidetree.DecodeStateRecord(d.id.Suffix, other)
	require.ErrorIs(t, err, sidetree.ErrStateRecord, "another version")
}

// FuzzDecodeStateRecord: any bytes decode to a record or an error, never a panic, and a record
// that decodes encodes to bytes that decode to the same record.
func FuzzDecodeStateRecord(f *testing.F) {
	p := sidetree.DefaultProfile()
	w := wallet.New(wallet.Config{})
	id, create, err := w.Create(wallet.AddServices(wallet.Service{ID: "s", Type: "T", Endpoint: "https://s.example"}))
	require.NoError(f, err)
	upd, err := w.Update(id, wallet.AddPublicKeys(wallet.DocumentKey("k", id.UpdateKey, "authentication")))
	require.NoError(f, err)
	f.Add(sidetree.ResolveRecord(p, id.Suffix, history(create, upd)).AppendBinary(nil))
	f.Add(sidetree.ResolveRecord(p, id.Suffix, history(upd)).AppendBinary(nil))
	f.Add([]byte{1, 0, 0, 0, 0})
	// A did:orb record, which keeps its canonical second (version 2).
	orb := wallet.New(wallet.Config{AnchorOrigin: "https://a.example"})
	oid, ocreate, err := orb.Create()
	require.NoError(f, err)
	withTime := sidetree.ResolveRecord(sidetree.OrbProfile("https:a.example"), oid.Suffix,
		[]sidetree.AnchoredOperation{{Sequence: 3, Request: ocreate, Time: 1_800_000_000}}).AppendBinary(nil)
	require.Equal(f, byte(2), withTime[0])
	f.Add(withTime)
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := sidetree.DecodeStateRecord("EiSuffix", b)
		if err != nil {
			require.ErrorIs(t, err, sidetree.ErrStateRecord)
			return
		}
		again, err := sidetree.DecodeStateRecord("EiSuffix", rec.AppendBinary(nil))
		require.NoError(t, err)
		require.Equal(t, rec, again)
	})
}

// describe lists where each operation was anchored and its type, for a failure message.
func describe(ops []sidetree.AnchoredOperation) string {
	var b strings.Builder
	for _, op := range ops {
		var typ struct{ Type string }
		_ = json.Unmarshal(op.Request, &typ)
		fmt.Fprintf(&b, "%d.%d %s %s; ", op.Sequence, op.Position, typ.Type, op.Origin)
	}
	return b.String()
}

// TestStateRecordKeepsWhatItCannotShorten: a JWK is stored by its template and a commitment as
// its multihash bytes only where decoding them gives back exactly the JSON and the string; every
// other one is stored as it is, and all come back byte for byte.
func TestStateRecordKeepsWhatItCannotShorten(t *testing.T) {
	t.Parallel()
	x := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))
	y := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0x07}, 32))
	mh := base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, bytes.Repeat([]byte{0xfe}, 32)...))
	for _, tc := range []struct {
		name      string
		jwk       string
		shortened bool
	}{
		{"secp256k1", `{"kty":"EC","crv":"secp256k1","x":"` + x + `","y":"` + y + `"}`, true},
		{"Ed25519", `{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}`, true},
		{"an empty value", `{"kty":"OKP","crv":"Ed25519","x":""}`, true},
		{"a line feed in a value", `{"kty":"OKP","crv":"Ed25519","x":"` + x[:20] + "\n" + x[20:] + `"}`, false},
		{"a line feed the decoded length does not show", `{"kty":"OKP","crv":"Ed25519","x":"` + x[:20] + "\n" + x[20:40] + `"}`, false},
		{"a carriage return in a value", `{"kty":"OKP","crv":"Ed25519","x":"` + x[:4] + "\r" + x[4:] + `"}`, false},
		{"trailing bits set", `{"kty":"OKP","crv":"Ed25519","x":"` + x[:42] + `B"}`, false},
		{"a value of impossible length", `{"kty":"OKP","crv":"Ed25519","x":"` + x[:41] + `"}`, false},
		{"padding", `{"kty":"OKP","crv":"Ed25519","x":"` + x + `="}`, false},
		{"standard base64", `{"kty":"OKP","crv":"Ed25519","x":"` + strings.NewReplacer("-", "+", "_", "/").Replace(x) + `"}`, false},
		{"a member more", `{"kty":"OKP","crv":"Ed25519","x":"` + x + `","d":"AA"}`, false},
		{"the template cut short", `{"kty":"EC","crv":"secp256k1","x":"` + x + `"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, commitment := range []string{mh, mh[:20] + "\n" + mh[21:], mh[:45] + "B", "AA" + mh[2:]} {
				rec := &sidetree.StateRecord{State: &sidetree.State{
					Published: true, RecoveryCommitment: commitment, UpdateCommitment: mh,
					Document: sidetree.Document{PublicKeys: []sidetree.PublicKey{{ID: "k", Type: "JsonWebKey2020", JWK: []byte(tc.jwk)}}},
				}}
				b := rec.AppendBinary(nil)
				again, err := sidetree.DecodeStateRecord("EiSuffix", b)
				require.NoError(t, err)
				require.Equal(t, tc.jwk, string(again.State.Document.PublicKeys[0].JWK))
				require.Equal(t, commitment, again.State.RecoveryCommitment)
				require.Equal(t, mh, again.State.UpdateCommitment)
				require.Equal(t, b, again.AppendBinary(nil), "the record encodes as it did")
				if commitment == mh {
					// The key's share of the record: its JSON, or the template's index and the
					// decoded values, which are shorter.
					withoutKey := &sidetree.StateRecord{State: &sidetree.State{Published: true, RecoveryCommitment: commitment, UpdateCommitment: mh,
						Document: sidetree.Document{PublicKeys: []sidetree.PublicKey{{ID: "k", Type: "JsonWebKey2020", JWK: nil}}}}}
					share := len(b) - len(withoutKey.AppendBinary(nil))
					require.Equal(t, tc.shortened, share < len(tc.jwk), "stored in %d bytes", share)
				}
			}
		})
	}
}
