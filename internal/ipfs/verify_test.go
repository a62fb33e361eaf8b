package ipfs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/cas"
)

func TestVerify(t *testing.T) {
	t.Parallel()
	data := []byte("batch file bytes")
	big := randomBytes(3, 300<<10)
	raw := cas.CID{Version: cas.CIDv1, Codec: 0x55, Digest: [32]byte{1}}.String()
	tests := []struct {
		name    string
		cid     string
		data    []byte
		wantErr error
	}{
		{"v0 match", cas.ComputeCID(data, cas.CIDv0), data, nil},
		{"v1 match", cas.ComputeCID(data, cas.CIDv1), data, nil},
		{"dag match", cas.ComputeCID(big, cas.CIDv1), big, nil},
		{"empty match", cas.ComputeCID(nil, cas.CIDv0), []byte{}, nil},
		{"other bytes", cas.ComputeCID(data, cas.CIDv0), []byte("batch file bytez"), ErrMismatch},
		{"truncated dag", cas.ComputeCID(big, cas.CIDv0), big[:len(big)-1], ErrMismatch},
		{"raw codec", raw, data, ErrUnverifiable},
		{"malformed", "Qm-not-a-cid", data, cas.ErrInvalidCID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Verify(tt.cid, tt.data)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.ErrorContains(t, err, "verify")
		})
	}
}
