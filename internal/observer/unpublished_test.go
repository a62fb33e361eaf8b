package observer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
	"github.com/anchord/anchord/internal/store"
)

// TestUnpublishedKeepsWhatOrbKeeps: creates and updates are kept (Orb's default types),
// recovers and deactivates not; an operation leaves when indexed, when released, or after the
// TTL; a full store keeps nothing more until something lapses.
func TestUnpublishedKeepsWhatOrbKeeps(t *testing.T) {
	t.Parallel()
	w := wallet.New(wallet.Config{AnchorOrigin: "https://a.example"})
	parse := func(req []byte, err error) *sidetree.Operation {
		t.Helper()
		require.NoError(t, err)
		op, err := sidetree.ParseOperation(req, sidetree.DefaultProfile())
		require.NoError(t, err)
		return op
	}
	id, create, err := w.Create()
	createOp := parse(create, err)
	updateOp := parse(w.Update(id))
	recoverOp := parse(w.Recover(id))
	deactivateOp := parse(w.Deactivate(id))

	now := time.Unix(1700000000, 0)
	u := NewUnpublished(time.Minute, 2)
	u.now = func() time.Time { return now }
	u.Add(recoverOp, "r", "")
	u.Add(deactivateOp, "d", "")
	require.Zero(t, u.Len(), "Orb keeps creates and updates only")

	u.Add(createOp, "c", "ignored: a create names its own")
	u.Add(updateOp, "u", "https://a.example")
	require.Equal(t, 2, u.Len())
	ops := u.of(id.Suffix, nil)
	require.Len(t, ops, 2)
	require.Equal(t, "https://a.example", ops[0].origin, "the create's own anchorOrigin")
	require.Equal(t, "https://a.example", ops[1].origin)

	other, otherCreate, err := w.Create()
	otherOp := parse(otherCreate, err)
	u.Add(otherOp, "o", "")
	require.Equal(t, 2, u.Len(), "full")
	require.False(t, u.has(other.Suffix))

	u.Indexed([]store.DIDOperation{{Suffix: id.Suffix, Request: createOp.Request}})
	require.Equal(t, 1, u.Len())
	u.Release([]store.DIDPendingKey{{Suffix: id.Suffix, OpID: "someone else's"}})
	require.Equal(t, 1, u.Len(), "a release names the operation")
	u.Release([]store.DIDPendingKey{{Suffix: id.Suffix, OpID: "u"}})
	require.Zero(t, u.Len())

	u.Add(createOp, "c", "")
	u.Add(otherOp, "o", "")
	now = now.Add(time.Minute)
	require.Empty(t, u.of(id.Suffix, nil), "lapsed")
	require.Equal(t, 1, u.Len(), "the other DID's lapses when read or swept")
	u.Add(updateOp, "u", "")
	require.Equal(t, 2, u.Len(), "full again")
	u.Add(createOp, "c", "")
	require.Equal(t, 2, u.Len(), "a full store sweeps what lapsed before it refuses")
	require.False(t, u.has(other.Suffix))
	require.Len(t, u.of(id.Suffix, nil), 2)
}
