package activity

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/stretchr/testify/require"
)

// Orb's published hashlink values for "Hello World!", with and without its two example links.
const (
	helloHashlink = "hl:uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ"
	helloMetadata = "uoQ-CeEdodHRwczovL2V4YW1wbGUuY29tL2Nhcy91RWlBc2l3amFYT1lEbU9IeG12RGwzTXgwVGZKMHVDYXI1WVhxdW1qRkpVTklCZ3g1aXBmczovL1FtVUI5TnI3UnBxTllRcHloNFc5cjNSUU50dGlQUTZCUTlpUUxrdzlMenRKRno"
	helloLink1    = "https://example.com/cas/uEiAsiwjaXOYDmOHxmvDl3Mx0TfJ0uCar5YXqumjFJUNIBg"
	helloLink2    = "ipfs://QmUB9Nr7RpqNYQpyh4W9r3RQNttiPQ6BQ9iQLkw9LztJFz"
)

func TestHashlinkOrbVectors(t *testing.T) {
	t.Parallel()
	content := []byte("Hello World!")
	require.Equal(t, helloHashlink, NewHashlink(content))
	full := NewHashlink(content, helloLink1, helloLink2)
	require.Equal(t, helloHashlink+":"+helloMetadata, full)

	h, err := ParseHashlink(full)
	require.NoError(t, err)
	require.Equal(t, []string{helloLink1, helloLink2}, h.Links)
	require.Equal(t, "uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ", h.ResourceHash())
	require.Equal(t, helloHashlink, h.Anchor())
	require.Equal(t, full, h.String())
	require.NoError(t, h.Verify(content))
	require.ErrorIs(t, h.Verify([]byte("Hello World?")), ErrInvalid)

	// Computed independently: "hl:u" + base64url(0x12 0x20 ‖ sha256(content)).
	sum := sha256.Sum256(content)
	require.Equal(t, "hl:u"+base64.RawURLEncoding.EncodeToString(append([]byte{0x12, 0x20}, sum[:]...)), helloHashlink)
}

func TestParseHashlinkRejects(t *testing.T) {
	t.Parallel()
	rh := "uEiB_g7Flf_H8U7ktwYFIodZd_C1LH6PWdyhK3dIAEm2QaQ"
	cborMeta := func(v any) string {
		b, err := cbor.Marshal(v)
		require.NoError(t, err)
		return "u" + base64.RawURLEncoding.EncodeToString(b)
	}
	sha512 := append([]byte{0x13, 0x40}, make([]byte, 64)...)
	short := append([]byte{0x12, 0x20}, make([]byte, 31)...)
	tests := []struct {
		name string
		hl   string
		want string
	}{
		{"empty", "", "must start with"},
		{"no prefix", rh, "must start with"},
		{"uppercase prefix", "HL:" + rh, "must start with"},
		{"four parts", "hl:" + rh + ":" + helloMetadata + ":x", "more than 3 parts"},
		{"empty hash", "hl:", "resource hash"},
		{"base58 multibase", "hl:zQmWvQxTqbG2Z9HPJgG57jjwR154cKhbtJenbyYTWkjgF3e", "want multibase base64url"},
		{"not base64url", "hl:u!!!", "resource hash"},
		{"padded", "hl:" + rh + "=", "resource hash"},
		{"non-canonical trailing bits", "hl:" + rh[:len(rh)-1] + "R", "resource hash"},
		{"sha2-512", "hl:u" + base64.RawURLEncoding.EncodeToString(sha512), "not a sha2-256 multihash"},
		{"truncated digest", "hl:u" + base64.RawURLEncoding.EncodeToString(short), "not a sha2-256 multihash"},
		{"metadata not multibase", "hl:" + rh + ":abc", "metadata"},
		{"metadata not CBOR", "hl:" + rh + ":u" + base64.RawURLEncoding.EncodeToString([]byte{0xff}), "metadata: cbor"},
		{"metadata without links", "hl:" + rh + ":" + cborMeta(map[int]any{1: "x"}), "no links"},
		{"metadata links a string", "hl:" + rh + ":" + cborMeta(map[int]any{15: "just-string"}), "links"},
		{"metadata links not strings", "hl:" + rh + ":" + cborMeta(map[int]any{15: []int{1}}), "links"},
		{"metadata empty links", "hl:" + rh + ":" + cborMeta(map[int]any{15: []string{}}), "empty links"},
		{"metadata string keys", "hl:" + rh + ":" + cborMeta(map[string]any{"15": []string{"x"}}), "metadata: cbor"},
		{"too many links", "hl:" + rh + ":" + cborMeta(map[int]any{15: make([]string, MaxHashlinkLinks+1)}), "metadata: cbor"},
		{"too long", "hl:" + rh + ":u" + strings.Repeat("A", MaxIRILength), "more than 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseHashlink(tt.hl)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestParseHashlinkIgnoresOtherMetadataKeys(t *testing.T) {
	t.Parallel()
	b, err := cbor.Marshal(map[int]any{15: []string{"https://a.example/cas/x"}, 3: map[string]int{"x": 1}})
	require.NoError(t, err)
	h, err := ParseHashlink(helloHashlink + ":u" + base64.RawURLEncoding.EncodeToString(b))
	require.NoError(t, err)
	require.Equal(t, []string{"https://a.example/cas/x"}, h.Links)
}
