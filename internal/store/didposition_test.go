package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPositionsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, pos := range [][]DIDPosition{
		{{AnchorSeq: 1, Index: 0}},
		{{AnchorSeq: 1, Index: 9_999}, {AnchorSeq: 1 << 40, Index: 0}, {AnchorSeq: 1<<40 + 3, Index: 70_000}},
	} {
		b := AppendPositions(nil, pos)
		got, err := DecodePositions(b)
		require.NoError(t, err)
		require.Equal(t, pos, got)
	}
	require.Len(t, AppendPositions(nil, []DIDPosition{{AnchorSeq: 3_000, Index: 9_999}}), 4, "one operation: a few bytes")
	got, err := DecodePositions(nil)
	require.NoError(t, err)
	require.Empty(t, got)
}

func FuzzDecodePositions(f *testing.F) {
	f.Add(AppendPositions(nil, []DIDPosition{{AnchorSeq: 7, Index: 3}, {AnchorSeq: 9, Index: 0}}))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		pos, err := DecodePositions(b)
		if err != nil {
			return
		}
		again, err := DecodePositions(AppendPositions(nil, pos))
		require.NoError(t, err)
		require.Equal(t, pos, again)
	})
}
