package cosigner

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// specRequest is the example request body of c2sp.org/tlog-witness.
const specRequest = `old 20852014
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=

example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=
`

func TestParseAddCheckpointReadsTheSpecExample(t *testing.T) {
	t.Parallel()
	req, err := ParseAddCheckpoint([]byte(specRequest))
	require.NoError(t, err)
	require.Equal(t, uint64(20852014), req.OldSize)
	require.Len(t, req.Proof, 4)
	require.True(t, strings.HasPrefix(string(req.Checkpoint), "example.com/behind-the-sofa\n20852163\n"))
	require.True(t, strings.HasSuffix(string(req.Checkpoint), "+qbSzm9Q=\n"))
}

func TestParseAddCheckpointRefusesMalformedBodies(t *testing.T) {
	t.Parallel()
	hash := "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n"
	cp := "\nexample.com/log\n1\n" + strings.TrimSuffix(hash, "\n") + "\n\n— x y\n"
	for name, body := range map[string]string{
		"empty":             "",
		"no old line":       "new 1\n" + cp,
		"leading zero":      "old 01\n" + cp,
		"negative":          "old -1\n" + cp,
		"sign":              "old +1\n" + cp,
		"not a number":      "old x\n" + cp,
		"overflow":          "old 18446744073709551616\n" + cp,
		"no empty line":     "old 1\n" + hash,
		"no checkpoint":     "old 1\n" + hash + "\n",
		"short hash":        "old 1\nAAAA\n" + cp,
		"bad base64":        "old 1\n!!!!\n" + cp,
		"64 proof lines":    "old 1\n" + strings.Repeat(hash, 64) + cp,
		"no newline at all": "old 1",
		"space in size":     "old  1\n" + cp,
		"carriage return":   "old 1\r\n" + cp,
	} {
		_, err := ParseAddCheckpoint([]byte(body))
		require.ErrorIs(t, err, errMalformed, name)
	}
	req, err := ParseAddCheckpoint([]byte("old 0\n" + strings.Repeat(hash, 63) + cp))
	require.NoError(t, err, "63 proof lines are allowed")
	require.Len(t, req.Proof, 63)
}

func FuzzParseAddCheckpoint(f *testing.F) {
	f.Add([]byte(specRequest))
	f.Add([]byte("old 0\n\nexample.com/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n— example.com/log AAAA\n"))
	f.Add([]byte("old 1\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := ParseAddCheckpoint(body)
		if err != nil {
			return
		}
		if len(req.Proof) > MaxProofLines || len(req.Checkpoint) == 0 {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		for _, h := range req.Proof {
			if len(h) != 32 {
				t.Fatalf("a proof hash of %d bytes", len(h))
			}
		}
	})
}
