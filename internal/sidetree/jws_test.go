package sidetree

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const difUpdateJWS = "eyJhbGciOiJFUzI1NksifQ.eyJ1cGRhdGVLZXkiOnsia3R5IjoiRUMiLCJjcnYiOiJzZWNwMjU2azEiLCJ4Ijoid2Z3UUNKM09ScVZkbkhYa1Q4UC1MZ19HdHhCRWhYM3R5OU5VbnduSHJtdyIsInkiOiJ1aWU4cUxfVnVBblJEZHVwaFp1eExPNnFUOWtQcDNLUkdFSVJsVHBXcmZVIn0sImRlbHRhSGFzaCI6IkVpQ3BqTjQ3ZjBNcTZ4RE5VS240aFNlZ01FcW9EU19ycFEyOVd5MVY3M1ZEYncifQ.RwZK1DG5zcr4EsrRImzStb0VX5j2ZqApXZnuoAkA3IoRdErUscNG8RuxNZ0FjlJtjMJ0a-kn-_MdtR0wwvWVgg"

func TestParseCompactJWS(t *testing.T) {
	t.Parallel()
	jws, err := parseCompactJWSString(difUpdateJWS, DefaultProfile(), "signedData")
	require.Nil(t, err)
	require.Equal(t, ES256K, jws.alg)
	require.Equal(t, difUpdateJWS[:strings.LastIndexByte(difUpdateJWS, '.')], jws.signingInput)
	require.Len(t, jws.signature, 64)
	require.NotNil(t, jws.payload.Member("updateKey"))

	// Lenient decoding of JWS segments, as Node's Buffer: non-zero trailing bits in the
	// signature segment are accepted (the signature bytes are the same).
	sig := difUpdateJWS[strings.LastIndexByte(difUpdateJWS, '.')+1:]
	tweaked := difUpdateJWS[:len(difUpdateJWS)-1] + "h"
	require.NotEqual(t, sig[len(sig)-1:], "h")
	j2, err := parseCompactJWSString(tweaked, DefaultProfile(), "signedData")
	require.Nil(t, err)
	require.Equal(t, jws.signature, j2.signature)
}

func FuzzParseJWS(f *testing.F) {
	f.Add(difUpdateJWS)
	f.Add("eyJhbGciOiJFZERTQSJ9.e30.AA")
	f.Add("..")
	p := Profile{Algorithms: []Algorithm{ES256K, EdDSA}}
	f.Fuzz(func(t *testing.T, s string) {
		jws, err := parseCompactJWSString(s, p, "signedData")
		if err != nil {
			require.Nil(t, jws)
			require.NotEmpty(t, err.Code)
			return
		}
		require.Equal(t, s, jws.signingInput+"."+s[strings.LastIndexByte(s, '.')+1:])
		require.True(t, jws.alg == ES256K || jws.alg == EdDSA)
		header, derr := base64.RawURLEncoding.DecodeString(s[:strings.IndexByte(s, '.')])
		require.NoError(t, derr)
		require.Contains(t, string(header), "alg")
		// Verifying arbitrary input with real keys (the DIF update key, RFC 8032 test 1) never
		// panics and does not succeed.
		key := &signingKey{alg: ES256K, x: "wfwQCJ3ORqVdnHXkT8P-Lg_GtxBEhX3ty9NUnwnHrmw", y: "uie8qL_VuAnRDduphZuxLO6qT9kPp3KRGEIRlTpWrfU"}
		if jws.alg == EdDSA {
			key = &signingKey{alg: EdDSA, x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
		}
		if s != difUpdateJWS && !strings.HasPrefix(s, difUpdateJWS[:strings.LastIndexByte(difUpdateJWS, '.')]) {
			require.NotNil(t, key.verify(jws.signingInput, jws.signature))
		}
	})
}
