package sidetree_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

type didVector struct {
	LongFormDid  string `json:"longFormDid"`
	ShortFormDid string `json:"shortFormDid"`
}

func difDIDs(t testing.TB) didVector {
	t.Helper()
	var v didVector
	require.NoError(t, json.Unmarshal(readFile(t, "dif/resolution/did.json"), &v))
	return v
}

func TestParseDIDVectors(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	v := difDIDs(t)

	short, err := sidetree.ParseDID(p, v.ShortFormDid)
	require.NoError(t, err)
	require.Equal(t, difSuffix, short.Suffix)
	require.False(t, short.IsLongForm())
	require.Nil(t, short.Create)
	require.Equal(t, v.ShortFormDid, short.String())

	long, err := sidetree.ParseDID(p, v.LongFormDid)
	require.NoError(t, err)
	require.True(t, long.IsLongForm())
	require.Equal(t, difSuffix, long.Suffix)
	require.Equal(t, v.ShortFormDid, long.ShortForm())
	require.Equal(t, v.LongFormDid, long.String())
	require.Equal(t, difSuffix, long.Create.Suffix)

	// Encoding the vector create gives the vector long form.
	encoded, err := sidetree.LongFormDID(p, mustParse(t, difOperation(t, "create")))
	require.NoError(t, err)
	require.Equal(t, v.LongFormDid, encoded)
	require.Equal(t, v.ShortFormDid, sidetree.ShortFormDID(p, difSuffix))
}

func TestParseDIDNetworkMethod(t *testing.T) {
	t.Parallel()
	p := sidetree.Profile{Method: "ion:test"}
	create := mustParse(t, difOperation(t, "create"))
	long, err := sidetree.LongFormDID(p, create)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(long, "did:ion:test:"+difSuffix+":"))
	for _, s := range []string{"did:ion:test:" + difSuffix, long} {
		d, err := sidetree.ParseDID(p, s)
		require.NoError(t, err, s)
		require.Equal(t, difSuffix, d.Suffix)
		require.Equal(t, "ion:test", d.Method)
		require.Equal(t, s, d.String())
	}
	// Under method "ion", the network segment makes it look like a long form with suffix "test".
	_, err = sidetree.ParseDID(sidetree.Profile{Method: "ion"}, "did:ion:test:"+difSuffix)
	require.Equal(t, sidetree.CodeInvalidDID, sidetree.CodeOf(err))
}

func TestParseDIDRejects(t *testing.T) {
	t.Parallel()
	v := difDIDs(t)
	encoded := v.LongFormDid[strings.LastIndexByte(v.LongFormDid, ':')+1:]
	state, err := b64.DecodeString(encoded)
	require.NoError(t, err)
	longWith := func(state string) string { return v.ShortFormDid + ":" + b64.EncodeToString([]byte(state)) }
	var obj map[string]any
	require.NoError(t, json.Unmarshal(state, &obj))
	reencode := func(f func(m map[string]any)) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(state, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		canon, err := sidetree.Canonicalize(b)
		require.NoError(t, err)
		return v.ShortFormDid + ":" + b64.EncodeToString(canon)
	}
	for _, tc := range []struct {
		name, did string
		code      sidetree.Code
	}{
		{"other method", "did:ion:" + difSuffix, sidetree.CodeInvalidDID},
		{"not a DID", difSuffix, sidetree.CodeInvalidDID},
		{"empty suffix", "did:sidetree:", sidetree.CodeInvalidDID},
		{"suffix not a multihash", "did:sidetree:abc", sidetree.CodeInvalidDID},
		{"two extra segments", v.ShortFormDid + ":a:" + encoded, sidetree.CodeInvalidDID},
		{"empty initial state", v.ShortFormDid + ":", sidetree.CodeInvalidLongFormDID},
		{"padded initial state", v.LongFormDid + "=", sidetree.CodeInvalidLongFormDID},
		{"initial state not JSON", longWith("{"), sidetree.CodeInvalidLongFormDID},
		{"initial state not canonical", longWith(" " + string(state)), sidetree.CodeInvalidLongFormDID},
		{"initial state array", longWith("[]"), sidetree.CodeInvalidLongFormDID},
		{"initial state extra member", reencode(func(m map[string]any) { m["type"] = "create" }), sidetree.CodeInvalidLongFormDID},
		{"initial state without delta", reencode(func(m map[string]any) { delete(m, "delta") }), sidetree.CodeInvalidLongFormDID},
		{"delta hash mismatch", reencode(func(m map[string]any) { m["delta"].(map[string]any)["patches"] = []any{} }), sidetree.CodeInvalidLongFormDID},
		{"suffix of another DID", "did:sidetree:" + otherMultihash + ":" + encoded, sidetree.CodeInvalidLongFormDID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := sidetree.ParseDID(sidetree.DefaultProfile(), tc.did)
			require.Nil(t, d)
			require.Equal(t, tc.code, sidetree.CodeOf(err), "%v", err)
		})
	}
}

func FuzzParseDID(f *testing.F) {
	v := difDIDs(f)
	f.Add(v.LongFormDid)
	f.Add(v.ShortFormDid)
	f.Add("did:sidetree:" + otherMultihash + ":e30")
	p := sidetree.DefaultProfile()
	f.Fuzz(func(t *testing.T, s string) {
		d, err := sidetree.ParseDID(p, s)
		if err != nil {
			require.NotEmpty(t, sidetree.CodeOf(err))
			return
		}
		require.Equal(t, s, d.String())
		if d.IsLongForm() {
			// A long form that parses is the one canonical encoding of its create.
			again, err := sidetree.LongFormDID(p, d.Create)
			require.NoError(t, err)
			require.Equal(t, s, again)
		}
	})
}
