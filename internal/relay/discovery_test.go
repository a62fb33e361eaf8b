package relay

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
)

func TestDiscoveryLocation(t *testing.T) {
	t.Parallel()
	const suffix = "EiDahaOGH-liLLdDtTxEAdc8i-cfCz-WUcQdRJheMVNn3A"
	hl := activity.NewHashlink([]byte("linkset"), "https://Orb.Example.com:8443/cas/uEiA")
	h, err := activity.ParseHashlink(hl)
	require.NoError(t, err)
	hash := h.ResourceHash()
	for _, tc := range []struct{ did, base string }{
		{"did:orb:https:orb.example.com:" + hash + ":" + suffix, "https://orb.example.com"},
		{"did:orb:http:127.0.0.1:8080:" + hash + ":" + suffix, "http://127.0.0.1:8080"},
		{"did:orb:" + hl + ":" + suffix, "https://orb.example.com:8443"},
		{"did:orb:" + hash + ":" + suffix, ""},               // a bare name: nowhere to look
		{"did:orb:uAAA:" + suffix, ""},                       // unpublished: not discovered, as at Orb
		{"did:orb:https:orb.example.com:uAAA:" + suffix, ""}, // the same with a hint
		{"did:orb:hl:" + hash + ":" + suffix, ""},            // a hashlink without a link
		{"did:sidetree:" + suffix, ""},
	} {
		base, got, err := discoveryLocation(tc.did)
		if tc.base == "" {
			require.Error(t, err, tc.did)
			continue
		}
		require.NoError(t, err, tc.did)
		require.Equal(t, tc.base, base, tc.did)
		require.Equal(t, suffix, got)
	}
}
