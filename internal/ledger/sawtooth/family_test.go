package sawtooth_test

import (
	"crypto/sha512"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/ledger/sawtooth"
)

func TestNamespace(t *testing.T) {
	t.Parallel()

	// The intkey family's prefix, as published in Sawtooth's "building and submitting
	// transactions" tutorial (address 1cf1266e28…).
	require.Equal(t, "1cf126", sawtooth.Namespace("intkey"))
	sum := sha512.Sum512([]byte("anchord"))
	require.Equal(t, hex.EncodeToString(sum[:])[:6], sawtooth.Namespace(sawtooth.FamilyName))
}

func TestAnchorAddress(t *testing.T) {
	t.Parallel()

	anchor := "42.QmXyzAnchorReference"
	addr := sawtooth.AnchorAddress(sawtooth.FamilyName, anchor)
	require.Len(t, addr, sawtooth.AddressLen)
	sum := sha512.Sum512([]byte(anchor))
	require.Equal(t, sawtooth.Namespace(sawtooth.FamilyName)+hex.EncodeToString(sum[:])[:64], addr)
	require.NotEqual(t, addr, sawtooth.AnchorAddress(sawtooth.FamilyName, "43.QmXyzAnchorReference"))
	require.NotEqual(t, addr[:6], sawtooth.AnchorAddress("other", anchor)[:6])
}
