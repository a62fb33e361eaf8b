package activity

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateIRI(t *testing.T) {
	t.Parallel()
	for _, good := range []string{
		"https://a.example/services/orb", "http://127.0.0.1:8080/x?y=1#z", "did:web:a.example", PublicIRI,
		"hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ", "urn:uuid:1f0c2f1e-6b9e-4c55-9d35-2f1a3c1d9e01", "ipfs://QmX",
		"https://ex.example/ü",
	} {
		require.NoError(t, ValidateIRI(good), good)
	}
	for _, bad := range []string{"", "relative/path", "/abs/path", "https://a b", "https://a\x00", "http://[::1", "a:", strings.Repeat("h", MaxIRILength+1)} {
		require.Error(t, ValidateIRI(bad), bad)
	}
}

func TestValidateActorIRI(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"https://a.example/services/orb", "http://127.0.0.1:8080/services/orb", "did:web:a.example", "did:web:a.example%3A8443:services:orb"} {
		require.NoError(t, ValidateActorIRI(good), good)
	}
	for _, bad := range []string{"", "did:key:z6Mk", "did:web:", "did:web:a.example/x", "ftp://a.example/s", "https:///s", "mailto:a@b.example", "https://u@a.example/s"} {
		require.Error(t, ValidateActorIRI(bad), bad)
	}
}

func TestStrings(t *testing.T) {
	t.Parallel()
	var s Strings
	require.NoError(t, json.Unmarshal([]byte(`"a"`), &s))
	require.Equal(t, Strings{"a"}, s)
	require.NoError(t, json.Unmarshal([]byte(`["a","b"]`), &s))
	require.Equal(t, Strings{"a", "b"}, s)
	require.True(t, s.Contains("b"))
	require.False(t, s.Contains("c"))
	require.Error(t, json.Unmarshal([]byte(`5`), &s))
	require.Error(t, json.Unmarshal([]byte(`[{"a":1}]`), &s))
	out, err := json.Marshal(Strings{"a"})
	require.NoError(t, err)
	require.Equal(t, `"a"`, string(out))
	out, err = json.Marshal(Strings{"a", "b"})
	require.NoError(t, err)
	require.Equal(t, `["a","b"]`, string(out))
}

func TestTypeIsActivity(t *testing.T) {
	t.Parallel()
	for _, typ := range []Type{TypeFollow, TypeAccept, TypeReject, TypeUndo, TypeCreate, TypeAnnounce, TypeOffer, TypeInvite, TypeLike} {
		require.True(t, typ.IsActivity(), typ)
	}
	for _, typ := range []Type{TypeService, TypeAnchorEvent, TypeAnchorReceipt, TypeCollection, "Delete", ""} {
		require.False(t, typ.IsActivity(), typ)
	}
}
