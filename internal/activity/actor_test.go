package activity

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestActorRoundTrip(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"actor_http.json", "actor_did.json"} {
		data := readTestdata(t, file)
		a, err := ParseActor(data)
		require.NoError(t, err, file)
		out, err := json.Marshal(a)
		require.NoError(t, err)
		require.JSONEq(t, string(data), string(out), file)
	}

	a, err := ParseActor(readTestdata(t, "actor_http.json"))
	require.NoError(t, err)
	require.Equal(t, NewService("https://a.example/services/orb", a.PublicKey.PublicKeyPem), a)

	did, err := ParseActor(readTestdata(t, "actor_did.json"))
	require.NoError(t, err)
	require.Equal(t, &PublicKey{ID: "did:web:b.example:services:orb#k1"}, did.PublicKey)
	require.Equal(t, "https://b.example/services/orb/inbox", did.Inbox)
}

func TestParseActorRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
		want string
	}{
		{"no id", `{"type":"Service","inbox":"https://a.example/s/inbox"}`, "id"},
		{"relative id", `{"id":"/s","type":"Service","inbox":"https://a.example/s/inbox"}`, "id"},
		{"no inbox", `{"id":"https://a.example/s","type":"Service"}`, "inbox"},
		{"did inbox", `{"id":"https://a.example/s","type":"Service","inbox":"did:web:a.example"}`, "inbox"},
		{"bad collection", `{"id":"https://a.example/s","type":"Service","inbox":"https://a.example/s/inbox","outbox":"outbox"}`, "collection"},
		{"key without id", `{"id":"https://a.example/s","type":"Service","inbox":"https://a.example/s/inbox","publicKey":{"owner":"https://a.example/s","publicKeyPem":"x"}}`, "publicKey id"},
		{"key without owner", `{"id":"https://a.example/s","type":"Service","inbox":"https://a.example/s/inbox","publicKey":{"id":"https://a.example/s/keys/main-key","publicKeyPem":"x"}}`, "publicKey owner"},
		{"key a number", `{"id":"https://a.example/s","type":"Service","inbox":"https://a.example/s/inbox","publicKey":5}`, "cannot unmarshal"},
		{"not an object", `"https://a.example/s"`, "top level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := ParseActor([]byte(tt.json))
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
			require.Nil(t, a)
		})
	}
}

func TestPublicKeyMarshal(t *testing.T) {
	t.Parallel()
	out, err := json.Marshal(PublicKey{ID: "did:web:b.example#k1"})
	require.NoError(t, err)
	require.Equal(t, `"did:web:b.example#k1"`, string(out))
	out, err = json.Marshal(PublicKey{ID: "https://a.example/s/keys/main-key", Owner: "https://a.example/s", PublicKeyPem: "p"})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"https://a.example/s/keys/main-key","owner":"https://a.example/s","publicKeyPem":"p"}`, string(out))
}
