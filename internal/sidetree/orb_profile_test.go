package sidetree_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

const orbOrigin = "https://orb.example.com"

// TestOrbClientOperations: every operation type, signed as Orb's client library signs it with
// each key algorithm of Orb's v1.0 protocol, is accepted by the did:orb profile and resolves to
// the document the client meant; the same requests under the default profile are refused where
// they use what only Orb allows.
func TestOrbClientOperations(t *testing.T) {
	t.Parallel()
	p := sidetree.OrbProfile("https:anchord.example.com")
	require.NoError(t, p.Validate())
	for _, curve := range []string{"Ed25519", "P-256", "P-384", "secp256k1"} {
		t.Run(curve, func(t *testing.T) {
			t.Parallel()
			c := &orbClient{t: t, curve: curve, origin: orbOrigin}
			didKey := c.newKey()
			d, create := c.create(orbService("svc1"), orbKeyPatch("auth", didKey))
			op, err := sidetree.ParseOperation(create, p)
			require.NoError(t, err)
			require.Equal(t, d.suffix, op.Suffix, "the suffix is the client's")
			require.Equal(t, orbOrigin, op.AnchorOrigin)

			update := c.update(d, nil, map[string]any{"action": "remove-services", "ids": []any{"svc1"}}, orbService("svc2"))
			_, err = sidetree.ParseOperation(update, p)
			require.NoError(t, err)
			windowed := c.update(d, map[string]any{"anchorFrom": time.Now().Add(-time.Minute).Unix(), "anchorUntil": time.Now().Add(time.Hour).Unix()},
				map[string]any{"action": "add-also-known-as", "uris": []any{"https://alias.example.com/a", "did:web:alias.example.com"}})
			_, err = sidetree.ParseOperation(windowed, p)
			require.NoError(t, err)

			st := sidetree.Resolve(p, d.suffix, history(create, update, windowed))
			require.NotNil(t, st)
			require.Equal(t, 3, st.Operations)
			require.Len(t, st.Document.Services, 1)
			require.Equal(t, "svc2", st.Document.Services[0].ID)
			require.Equal(t, []string{"https://alias.example.com/a", "did:web:alias.example.com"}, st.Document.AlsoKnownAs)
			require.Equal(t, d.update.jwk().X, mustJWKX(t, st), "the update commitment is the client's next update key")

			recover := c.recover(d, orbService("svc3"))
			_, err = sidetree.ParseOperation(recover, p)
			require.NoError(t, err)
			st = sidetree.Resolve(p, d.suffix, history(create, update, windowed, recover))
			require.Len(t, st.Document.Services, 1)
			require.Equal(t, "svc3", st.Document.Services[0].ID)
			require.Nil(t, st.Document.AlsoKnownAs, "a recover starts the document afresh")

			deactivate := c.deactivate(d)
			_, err = sidetree.ParseOperation(deactivate, p)
			require.NoError(t, err)
			st = sidetree.Resolve(p, d.suffix, history(create, update, windowed, recover, deactivate))
			require.True(t, st.Deactivated)

			// The reference implementation's rules refuse what is Orb's: a kid in the header,
			// keys other than secp256k1, anchorFrom in signed data.
			_, err = sidetree.ParseOperation(update, sidetree.DefaultProfile())
			require.Error(t, err)
		})
	}
}

// mustJWKX returns the x of the key whose commitment the state expects next, found by trying
// the client's: the commitment equals the client's computation for exactly one key.
func mustJWKX(t *testing.T, st *sidetree.State) string {
	t.Helper()
	require.NotEmpty(t, st.UpdateCommitment)
	return jwkXForCommitment(t, st.UpdateCommitment)
}

// clientKeys maps each commitment an orbClient computed to its key's x.
var (
	clientKeysMu sync.Mutex
	clientKeys   = map[string]string{}
)

func jwkXForCommitment(t *testing.T, commitment string) string {
	t.Helper()
	clientKeysMu.Lock()
	x, ok := clientKeys[commitment]
	clientKeysMu.Unlock()
	require.True(t, ok, "commitment %s is of no key the client made", commitment)
	return x
}

func TestOrbProfileRejects(t *testing.T) {
	t.Parallel()
	p := sidetree.OrbProfile("")
	c := &orbClient{t: t, curve: "P-256", origin: orbOrigin}
	d, create := c.create(orbService("s"))
	now := time.Now()
	big := strings.Repeat("x", 1500)
	for _, tc := range []struct {
		name string
		body []byte
		code sidetree.Code
	}{
		{"replace is not enabled", func() []byte {
			_, b := c.create(map[string]any{"action": "replace", "document": map[string]any{}})
			return b
		}(), sidetree.CodeUnknownPatchAction},
		{"anchorOrigin is required", func() []byte {
			_, b := (&orbClient{t: t, curve: "P-256"}).create(orbService("s"))
			return b
		}(), sidetree.CodeMissingAnchorOrigin},
		{"operation above 2,500 bytes", func() []byte {
			_, b := c.create(orbService("s"), map[string]any{"action": "add-also-known-as", "uris": []any{"https://a.example/" + big}}, map[string]any{"action": "add-also-known-as", "uris": []any{"https://b.example/" + big[:900]}})
			return b
		}(), sidetree.CodeOperationTooLarge},
		{"expired", c.update(&orbDID{suffix: d.suffix, update: d.update}, map[string]any{"anchorUntil": now.Add(-time.Second).Unix()}, orbService("u")), sidetree.CodeOperationExpired},
		{"anchorFrom alone expires after 1,700 s", c.update(&orbDID{suffix: d.suffix, update: d.update}, map[string]any{"anchorFrom": now.Add(-1701 * time.Second).Unix()}, orbService("u")), sidetree.CodeOperationExpired},
		{"early", c.update(&orbDID{suffix: d.suffix, update: d.update}, map[string]any{"anchorFrom": now.Add(time.Hour).Unix()}, orbService("u")), sidetree.CodeOperationEarly},
		{"anchor time not a number", c.update(&orbDID{suffix: d.suffix, update: d.update}, map[string]any{"anchorFrom": "soon"}, orbService("u")), sidetree.CodeInvalidSignedData},
		{"a create without patches", func() []byte {
			_, b := c.create([]any{}...)
			return b
		}(), sidetree.CodeInvalidPatch},
		{"an update without patches", c.update(&orbDID{suffix: d.suffix, update: d.update}, nil, []any{}...), sidetree.CodeInvalidPatch},
	} {
		_, err := sidetree.ParseOperation(tc.body, p)
		require.Equal(t, tc.code, sidetree.CodeOf(err), "%s: %v", tc.name, err)
	}
	// Refused in Orb's words: an empty list, not a missing one.
	noPatches := c.update(&orbDID{suffix: d.suffix, update: d.update}, nil, []any{}...)
	require.Contains(t, string(noPatches), `"patches":[]`)
	_, err := sidetree.ParseOperation(noPatches, p)
	require.ErrorContains(t, err, "missing patches", "Orb's words")
	_, err = sidetree.ParseOperation(create, p)
	require.NoError(t, err)

	// A header member other than alg and kid, an algorithm outside Orb's list, a curve outside it.
	update := c.update(&orbDID{suffix: d.suffix, update: d.update}, nil, orbService("u"))
	var req map[string]any
	require.NoError(t, json.Unmarshal(update, &req))
	parts := strings.Split(req["signedData"].(string), ".")
	for header, code := range map[string]sidetree.Code{
		`{"alg":"ES256","typ":"JWT"}`: sidetree.CodeInvalidJWSHeader,
		`{"alg":"ES384"}`:             sidetree.CodeUnsupportedAlgorithm,
		`{"kid":"k"}`:                 sidetree.CodeInvalidJWSHeader,
	} {
		req["signedData"] = b64u.EncodeToString([]byte(header)) + "." + parts[1] + "." + parts[2]
		body, _ := json.Marshal(req)
		_, err := sidetree.ParseOperation(body, p)
		require.Equal(t, code, sidetree.CodeOf(err), "%s: %v", header, err)
	}
	req["signedData"] = strings.Join(parts, ".")
	var payload map[string]any
	raw, _ := b64u.DecodeString(parts[1])
	require.NoError(t, json.Unmarshal(raw, &payload))
	payload["updateKey"].(map[string]any)["crv"] = "P-521"
	raw, _ = json.Marshal(payload)
	req["signedData"] = parts[0] + "." + b64u.EncodeToString(raw) + "." + parts[2]
	body, _ := json.Marshal(req)
	_, err = sidetree.ParseOperation(body, p)
	require.Equal(t, sidetree.CodeInvalidKey, sidetree.CodeOf(err))

	// A signature made with another key fails, for each curve.
	for _, curve := range []string{"Ed25519", "P-256", "P-384", "secp256k1"} {
		c := &orbClient{t: t, curve: curve, origin: orbOrigin}
		d, _ := c.create(orbService("s"))
		good := c.update(&orbDID{suffix: d.suffix, update: d.update}, nil, orbService("u"))
		var r map[string]any
		require.NoError(t, json.Unmarshal(good, &r))
		ps := strings.Split(r["signedData"].(string), ".")
		other := c.newKey().sign([]byte(ps[0] + "." + ps[1]))
		r["signedData"] = ps[0] + "." + ps[1] + "." + b64u.EncodeToString(other)
		bad, _ := json.Marshal(r)
		_, err := sidetree.ParseOperation(bad, p)
		require.Equal(t, sidetree.CodeInvalidSignature, sidetree.CodeOf(err), curve)
	}
}

// TestOrbRulesOnAnchorTimes: under the did:orb profile resolution reads each operation's anchor
// second as Orb does. An update anchored in the same whole second as the DID's create, or its
// last recover, does not apply, as Orb's operation processor ignores it; an update in a later
// second does, and so do two updates in one second. An operation anchored outside its signed
// window (anchorFrom, anchorUntil) is treated as Orb's operation applier treats it. Where a time
// is not known, and under the reference implementation's rules, nothing changes. Every way of
// computing the state agrees: Resolve, ResolveRecord, Next one operation at a time, and the
// record's binary form.
func TestOrbRulesOnAnchorTimes(t *testing.T) {
	t.Parallel()
	p := sidetree.OrbProfile("https:anchord.example.com")
	c := &orbClient{t: t, curve: "Ed25519", origin: orbOrigin}
	const t0 = int64(1_800_000_000)
	type anchored struct {
		req  []byte
		time int64
	}
	// resolve checks that every way gives one state, and returns its services.
	resolve := func(t *testing.T, p sidetree.Profile, suffix string, history ...anchored) []string {
		t.Helper()
		ops := make([]sidetree.AnchoredOperation, len(history))
		for i, h := range history {
			ops[i] = sidetree.AnchoredOperation{Sequence: uint64(i + 1), Request: h.req, Time: h.time}
		}
		want := sidetree.ResolveRecord(p, suffix, ops)
		require.NotNil(t, want.State)
		require.Equal(t, sidetree.Resolve(p, suffix, ops), want.State)
		var rec *sidetree.StateRecord
		for i, op := range ops {
			next, ok := rec.Next(p, suffix, op)
			if !ok {
				next = sidetree.ResolveRecord(p, suffix, ops[:i+1])
			}
			decoded, err := sidetree.DecodeStateRecord(suffix, next.AppendBinary(nil))
			require.NoError(t, err)
			require.Equal(t, next, decoded)
			rec = decoded
		}
		require.Equal(t, want, rec)
		if !p.Orb {
			require.Zero(t, want.State.CanonicalTime, "kept only where the rule needs it")
		}
		return serviceIDs(want.State)
	}

	t.Run("in the create's second", func(t *testing.T) {
		t.Parallel()
		d, create := c.create(orbService("a"))
		update := c.update(d, nil, orbService("b"))
		require.Equal(t, []string{"a"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{update, t0}))
		require.Equal(t, []string{"a", "b"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{update, t0 + 1}))
		require.Equal(t, []string{"a", "b"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{update, 0}), "the update's time not known")
		require.Equal(t, []string{"a", "b"}, resolve(t, p, d.suffix, anchored{create, 0}, anchored{update, t0}), "the create's time not known")
	})
	t.Run("updates in one second", func(t *testing.T) {
		t.Parallel()
		d, create := c.create(orbService("a"))
		u1 := c.update(d, nil, orbService("b"))
		u2 := c.update(d, nil, orbService("c"))
		require.Equal(t, []string{"a", "b", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{u1, t0 + 1}, anchored{u2, t0 + 1}))
	})
	t.Run("in the last recover's second", func(t *testing.T) {
		t.Parallel()
		d, create := c.create(orbService("a"))
		u1 := c.update(d, nil, orbService("b"))
		rec := c.recover(d, orbService("r"))
		u2 := c.update(d, nil, orbService("c"))
		require.Equal(t, []string{"r"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{u1, t0 + 1}, anchored{rec, t0 + 5}, anchored{u2, t0 + 5}))
		require.Equal(t, []string{"r", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{u1, t0 + 1}, anchored{rec, t0 + 5}, anchored{u2, t0 + 6}))
		// A recover in the create's second applies: the rule is on updates only.
		d2, create2 := c.create(orbService("a"))
		rec2 := c.recover(d2, orbService("r"))
		require.Equal(t, []string{"r"}, resolve(t, p, d2.suffix, anchored{create2, t0}, anchored{rec2, t0}))
	})
	t.Run("outside the signed window", func(t *testing.T) {
		t.Parallel()
		window := map[string]any{"anchorFrom": t0 + 10, "anchorUntil": t0 + 20}
		// An update anchored outside its window moves the update commitment and leaves the
		// document: the next update, signed with the key it committed to, applies.
		d, create := c.create(orbService("a"))
		early := c.update(d, window, orbService("b"))
		next := c.update(d, nil, orbService("c"))
		require.Equal(t, []string{"a", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{early, t0 + 5}, anchored{next, t0 + 30}))
		require.Equal(t, []string{"a", "b", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{early, t0 + 10}, anchored{next, t0 + 30}), "from is in the window")
		require.Equal(t, []string{"a", "b", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{early, t0 + 20}, anchored{next, t0 + 30}), "and so is until")
		require.Equal(t, []string{"a", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{early, t0 + 21}, anchored{next, t0 + 30}))
		require.Equal(t, []string{"a", "b", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{early, 0}, anchored{next, t0 + 30}), "its second not known")

		// anchorFrom alone: valid for OrbAnchorWindow seconds.
		d, create = c.create(orbService("a"))
		late := c.update(d, map[string]any{"anchorFrom": t0 + 10}, orbService("b"))
		require.Equal(t, []string{"a", "b"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{late, t0 + 10 + sidetree.OrbAnchorWindow}))
		require.Equal(t, []string{"a"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{late, t0 + 11 + sidetree.OrbAnchorWindow}))

		// A recover outside its window moves both commitments and leaves an empty document.
		d, create = c.create(orbService("a"))
		rec := c.recoverSigned(d, window, orbService("r"))
		after := c.update(d, nil, orbService("c"))
		require.Nil(t, resolve(t, p, d.suffix, anchored{create, t0}, anchored{rec, t0 + 30}))
		require.Equal(t, []string{"c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{rec, t0 + 30}, anchored{after, t0 + 31}))
		require.Equal(t, []string{"r", "c"}, resolve(t, p, d.suffix, anchored{create, t0}, anchored{rec, t0 + 15}, anchored{after, t0 + 31}))

		// A deactivate outside its window does not apply.
		d, create = c.create(orbService("a"))
		deactivate := c.deactivateSigned(d, window)
		ops := []sidetree.AnchoredOperation{{Sequence: 1, Request: create, Time: t0}, {Sequence: 2, Request: deactivate, Time: t0 + 30}}
		require.False(t, sidetree.Resolve(p, d.suffix, ops).Deactivated)
		ops[1].Time = t0 + 15
		require.True(t, sidetree.Resolve(p, d.suffix, ops).Deactivated)
	})
	t.Run("the reference implementation's rules", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t, service("a"))
		update := d.update(t, service("b"))
		require.Equal(t, []string{"a", "b"}, resolve(t, sidetree.DefaultProfile(), d.id.Suffix, anchored{create, t0}, anchored{update, t0}))
	})
}
