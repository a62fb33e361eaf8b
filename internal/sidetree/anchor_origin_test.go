package sidetree_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

const (
	originA = "https://a.example/services/anchord"
	originB = "https://b.example/services/anchord"
)

// methodMetadata renders st for its short-form DID and returns didDocumentMetadata.method.
func methodMetadata(t *testing.T, st *sidetree.State) map[string]any {
	t.Helper()
	var res struct {
		Meta struct {
			Method map[string]any `json:"method"`
		} `json:"didDocumentMetadata"`
	}
	require.NoError(t, json.Unmarshal(mustRender(t, st), &res))
	return res.Meta.Method
}

func TestAnchorOriginParsed(t *testing.T) {
	t.Parallel()
	w := wallet.New(wallet.Config{AnchorOrigin: originA})
	id, create, err := w.Create(service("s"))
	require.NoError(t, err)
	op, err := sidetree.ParseOperation(create, sidetree.DefaultProfile())
	require.NoError(t, err)
	require.Equal(t, originA, op.AnchorOrigin)
	require.Equal(t, originA, op.SuffixData.AnchorOrigin)
	// The origin is part of suffixData, so of the DID: the wallet's suffix is the parser's.
	require.Equal(t, id.Suffix, op.Suffix)
	require.JSONEq(t, string(create), string(op.Request))
	require.Contains(t, string(op.SuffixData.JSON()), `"anchorOrigin":"`+originA+`"`)

	_, plain, err := wallet.New(wallet.Config{}).Create(service("s"))
	require.NoError(t, err)
	op2, err := sidetree.ParseOperation(plain, sidetree.DefaultProfile())
	require.NoError(t, err)
	require.Empty(t, op2.AnchorOrigin)
	require.NotContains(t, string(op2.Request), "anchorOrigin")

	recover, err := w.Recover(id, service("r"))
	require.NoError(t, err)
	rop, err := sidetree.ParseOperation(recover, sidetree.DefaultProfile())
	require.NoError(t, err)
	require.Equal(t, originA, rop.AnchorOrigin)
}

func TestAnchorOriginInResolution(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	w := wallet.New(wallet.Config{AnchorOrigin: originA})
	id, create, err := w.Create(service("s"))
	require.NoError(t, err)
	update, err := w.Update(id, service("u"))
	require.NoError(t, err)

	// Declared by the create: reported whoever anchored the operations.
	st := sidetree.Resolve(p, id.Suffix, history(create, update))
	require.Equal(t, originA, st.AnchorOrigin)
	require.Equal(t, originA, methodMetadata(t, st)["anchorOrigin"])

	// A recover that declares another origin moves it; one that declares none keeps it.
	moved := wallet.New(wallet.Config{AnchorOrigin: originB})
	recover, err := moved.Recover(id, service("r"))
	require.NoError(t, err)
	st = sidetree.Resolve(p, id.Suffix, history(create, update, recover))
	require.Equal(t, originB, st.Origin())
	recover2, err := wallet.New(wallet.Config{}).Recover(id, service("r2"))
	require.NoError(t, err)
	st = sidetree.Resolve(p, id.Suffix, history(create, update, recover, recover2))
	require.Equal(t, originB, st.Origin())
	require.Equal(t, []string{"r2"}, serviceIDs(st))
}

func TestAnchoredByInResolution(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	d, create := newDID(t, service("s"))
	update := d.update(t, service("u"))

	// Undeclared: the other domain whose anchor carried the last operation applied.
	ops := history(create, update)
	ops[0].Origin = originA
	ops[1].Origin = originB
	st := sidetree.Resolve(p, d.id.Suffix, ops)
	require.Empty(t, st.AnchorOrigin)
	require.Equal(t, originB, st.AnchoredBy)
	require.Equal(t, originB, methodMetadata(t, st)["anchorOrigin"])

	// The last operation anchored here: nothing is reported, as for any local DID.
	ops[1].Origin = ""
	st = sidetree.Resolve(p, d.id.Suffix, ops)
	require.Empty(t, st.Origin())
	require.NotContains(t, methodMetadata(t, st), "anchorOrigin")

	// An operation that does not apply does not move it.
	stale := withSignatureBy(t, d.update(t, service("x")))
	ops = append(history(create, update), sidetree.AnchoredOperation{Sequence: 3, Request: stale, Origin: originB})
	ops[0].Origin, ops[1].Origin = originA, originA
	st = sidetree.Resolve(p, d.id.Suffix, ops)
	require.Equal(t, originA, st.Origin())
}
