package httpsig

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVerifyFromChecksTheKeyIDBeforeResolving(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, keyID, signer string
		reason              error
		resolves            bool
	}{
		{"on the signer's host", testKeyID, testOwner, nil, true},
		{"another host", "https://c.example/services/anchord/keys/main-key", testOwner, errKeyIDElsewhere, false},
		{"another port", "https://a.example:8443/services/anchord/keys/main-key", testOwner, errKeyIDElsewhere, false},
		{"another scheme, so another port", "http://a.example/services/anchord/keys/main-key", testOwner, errKeyIDElsewhere, false},
		{"loopback port of the signer's own name", "http://127.0.0.1:8081/admin/v1/dead-letters/1/retry", testOwner, errKeyIDElsewhere, false},
		{"not a URL", "did:web:a.example#key-1", testOwner, errKeyIDNotURL, false},
		{"signer that is not a URL", testKeyID, "did:web:a.example", errKeyIDElsewhere, false},
		{"a key of another owner on the same host", testKeyID, "https://a.example/services/other", errOtherOwner, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			r := b.signed(t, b.signerFor(t, tt.keyID, b.priv), "POST", testInbox, "x")
			got, err := b.verifier.VerifyFrom(r, tt.signer)
			if tt.reason == nil {
				require.NoError(t, err)
				require.Equal(t, testOwner, got.Owner)
				return
			}
			require.ErrorIs(t, err, ErrUnauthenticated)
			require.ErrorIs(t, err, ErrKeyUnverified)
			require.ErrorIs(t, err, tt.reason)
			if tt.resolves {
				require.EqualValues(t, 1, b.resolved.Load())
			} else {
				require.Zero(t, b.resolved.Load(), "nothing is fetched for a keyId off the signer's host")
			}
		})
	}
}

func TestVerifyRefusesAKeyIDThatIsNotAURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.verifier.Verify(b.signed(t, b.signerFor(t, "did:web:a.example#key-1", b.priv), "GET", testOutbox, ""))
	require.ErrorIs(t, err, ErrKeyUnverified)
	require.ErrorIs(t, err, errKeyIDNotURL)
	require.Zero(t, b.resolved.Load())

	_, err = b.verifier.VerifyFrom(b.signed(t, b.signer, "GET", testOutbox, ""), "")
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrUnauthenticated, "no signer is the caller's mistake")
}

func TestSameHost(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"https://a.example/k", "https://a.example/actor", true},
		{"https://A.Example/k", "https://a.example:443/actor", true},
		{"http://a.example/k", "http://a.example:80/actor", true},
		{"http://127.0.0.1:8080/k", "http://127.0.0.1:8080/services/anchord", true},
		{"http://[::1]:8080/k", "http://[::1]:8080/a", true},
		{"http://a.example/k", "https://a.example/actor", false},
		{"https://a.example:8443/k", "https://a.example/actor", false},
		{"https://b.a.example/k", "https://a.example/actor", false},
		{"http://127.0.0.1:8081/k", "http://127.0.0.1:8080/a", false},
		{"https://user@a.example/k", "https://a.example/actor", false},
		{"ftp://a.example/k", "ftp://a.example/k", false},
		{"did:web:a.example", "did:web:a.example", false},
		{"", "", false},
		{"https:///k", "https:///k", false},
	} {
		require.Equal(t, tt.want, SameHost(tt.a, tt.b), "%s %s", tt.a, tt.b)
	}
}
