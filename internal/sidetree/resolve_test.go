package sidetree_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// did is a test DID with every request built for it so far.
type did struct {
	w  *wallet.Wallet
	id *wallet.Identity
}

func newDID(t testing.TB, patches ...wallet.Patch) (*did, []byte) {
	t.Helper()
	w := wallet.New(wallet.Config{})
	id, req, err := w.Create(patches...)
	require.NoError(t, err)
	return &did{w: w, id: id}, req
}

func (d *did) update(t testing.TB, patches ...wallet.Patch) []byte {
	t.Helper()
	req, err := d.w.Update(d.id, patches...)
	require.NoError(t, err)
	return req
}

func (d *did) recover(t testing.TB, patches ...wallet.Patch) []byte {
	t.Helper()
	req, err := d.w.Recover(d.id, patches...)
	require.NoError(t, err)
	return req
}

func (d *did) deactivate(t testing.TB) []byte {
	t.Helper()
	req, err := d.w.Deactivate(d.id)
	require.NoError(t, err)
	return req
}

func service(id string) wallet.Patch {
	return wallet.AddServices(wallet.Service{ID: id, Type: "LinkedDomains", Endpoint: "https://" + id + ".example"})
}

func serviceIDs(st *sidetree.State) []string {
	var ids []string
	for _, s := range st.Document.Services {
		ids = append(ids, s.ID)
	}
	return ids
}

// withSignatureBy re-signs a request's payload with another key: structurally valid, so the
// anchored parse accepts it, but its signature does not verify with the revealed key.
func withSignatureBy(t testing.TB, body []byte) []byte {
	t.Helper()
	k, err := wallet.GenerateKey(sidetree.ES256K, nil)
	require.NoError(t, err)
	r := decodeRequest(t, body)
	r.resign(t, k, nil)
	return r.bytes(t)
}

// scenarioCache is shared by every scenario and resolves each history twice (parsing, then
// from the cache), so the scenarios also show that the cache answers what parsing does.
var scenarioCache = sidetree.NewOperationCache(sidetree.DefaultProfile(), 0)

// resolveAll resolves through Resolve and through scenarioCache, requires the same state from
// every way, and returns it.
func resolveAll(t *testing.T, suffix string, ops []sidetree.AnchoredOperation) *sidetree.State {
	t.Helper()
	want := sidetree.Resolve(sidetree.DefaultProfile(), suffix, ops)
	for range 2 {
		require.Equal(t, want, scenarioCache.Resolve(suffix, ops))
	}
	return want
}

func TestResolveScenarios(t *testing.T) {
	t.Parallel()

	t.Run("nothing anchored", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, resolveAll(t, difSuffix, nil))
	})
	t.Run("update without create", func(t *testing.T) {
		t.Parallel()
		require.Nil(t, resolveAll(t, difSuffix, history(difOperation(t, "update"))))
	})
	t.Run("update chain", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t, service("a"))
		u1 := d.update(t, service("b"))
		u2 := d.update(t, wallet.RemoveServices("a"))
		st := resolveAll(t, d.id.Suffix, history(create, u1, u2))
		require.Equal(t, []string{"b"}, serviceIDs(st))
		require.Equal(t, d.id.UpdateKey.Commitment(), st.UpdateCommitment)
		require.Equal(t, d.id.RecoveryKey.Commitment(), st.RecoveryCommitment)
		require.True(t, st.Published)
		require.Equal(t, uint64(3), st.LastSequence)
	})
	t.Run("input order does not matter", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t)
		ops := history(create, d.update(t, service("1")), d.update(t, service("2")), d.update(t, service("3")), d.recover(t, service("r")), d.update(t, service("4")))
		want := resolveAll(t, d.id.Suffix, ops)
		for range 10 {
			rand.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
			require.Equal(t, want, resolveAll(t, d.id.Suffix, ops))
		}
		require.Equal(t, []string{"r", "4"}, serviceIDs(want))
	})
	t.Run("first create wins", func(t *testing.T) {
		t.Parallel()
		_, create := newDID(t)
		op := mustParse(t, create)
		st := resolveAll(t, op.Suffix, []sidetree.AnchoredOperation{{Sequence: 7, Request: create}, {Sequence: 3, Request: create}})
		require.Equal(t, uint64(3), st.LastSequence)
	})
	t.Run("earliest valid operation per commitment wins", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t)
		saved := *d.id
		forkA := d.update(t, service("a"))
		*d.id = saved
		forkB := d.update(t, service("b"))
		st := resolveAll(t, d.id.Suffix, history(create, forkA, forkB))
		require.Equal(t, []string{"a"}, serviceIDs(st))
		// A later, longer fork does not win either.
		forkB2 := d.update(t, service("b2"))
		st = resolveAll(t, d.id.Suffix, history(create, forkA, forkB, forkB2))
		require.Equal(t, []string{"a"}, serviceIDs(st))
		// An invalid earlier candidate is skipped.
		st = resolveAll(t, d.id.Suffix, history(create, withSignatureBy(t, forkA), forkB, forkB2))
		require.Equal(t, []string{"b", "b2"}, serviceIDs(st))
	})
	t.Run("updates before a recovery are orphaned", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t, service("a"))
		saved := *d.id
		u := d.update(t, service("u"))
		*d.id = saved
		r := d.recover(t, service("r"))
		u2 := d.update(t, service("u2"))
		// u is anchored before r, yet only r's chain counts.
		st := resolveAll(t, d.id.Suffix, history(create, u, r, u2))
		require.Equal(t, []string{"r", "u2"}, serviceIDs(st))
		require.Equal(t, d.id.RecoveryKey.Commitment(), st.RecoveryCommitment)
	})
	t.Run("deactivate stops everything", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t)
		saved := *d.id
		deact := d.deactivate(t)
		later := d.update(t, service("x"))
		st := resolveAll(t, d.id.Suffix, history(create, deact, later))
		require.True(t, st.Deactivated)
		require.Empty(t, st.RecoveryCommitment)
		require.Empty(t, st.UpdateCommitment)
		// A recover after the deactivate is ignored too.
		*d.id = saved
		st = resolveAll(t, d.id.Suffix, history(create, deact, d.recover(t)))
		require.True(t, st.Deactivated)
	})
	t.Run("recover with mismatching delta keeps the rotation, loses the update key", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t, service("a"))
		r := decodeRequest(t, d.recover(t, service("r")))
		r.delta()["patches"] = []any{}
		st := resolveAll(t, d.id.Suffix, history(create, r.bytes(t), d.update(t, service("z"))))
		require.Equal(t, d.id.RecoveryKey.Commitment(), st.RecoveryCommitment)
		require.Empty(t, st.UpdateCommitment)
		require.Nil(t, st.Document.Services)
	})
	t.Run("recover with an invalid delta applies without it", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t, service("a"))
		r := decodeRequest(t, d.recover(t))
		r.delta()["patches"] = []any{map[string]any{"action": "unknown"}}
		st := resolveAll(t, d.id.Suffix, history(create, r.bytes(t)))
		require.Equal(t, d.id.RecoveryKey.Commitment(), st.RecoveryCommitment)
		require.Empty(t, st.UpdateCommitment)
	})
	t.Run("create with mismatching delta exists without update key", func(t *testing.T) {
		t.Parallel()
		r := decodeRequest(t, difOperation(t, "create"))
		r.delta()["patches"] = []any{}
		st := resolveAll(t, difSuffix, history(r.bytes(t), difOperation(t, "update")))
		require.NotNil(t, st)
		require.Empty(t, st.UpdateCommitment)
		require.Empty(t, st.Document.PublicKeys)
		require.Equal(t, sidetree.CodeNoUpdateCommitment, sidetree.CodeOf(st.Check(mustParse(t, difOperation(t, "update")))))
		// Recovery still works.
		st = resolveAll(t, difSuffix, history(r.bytes(t), difOperation(t, "recover")))
		require.Equal(t, difRecoverNextUpd, st.UpdateCommitment)
	})
	t.Run("create with an invalid delta exists without update key", func(t *testing.T) {
		t.Parallel()
		r := decodeRequest(t, difOperation(t, "create"))
		r.delta()["extra"] = true
		st := resolveAll(t, difSuffix, history(r.bytes(t)))
		require.NotNil(t, st)
		require.Empty(t, st.UpdateCommitment)
	})
	t.Run("create without delta is not a create", func(t *testing.T) {
		t.Parallel()
		// What the batch reader rebuilds when the chunk file is unusable: the reference
		// implementation's 3-member rule rejects it.
		r := decodeRequest(t, difOperation(t, "create"))
		delete(r, "delta")
		require.Nil(t, resolveAll(t, difSuffix, history(r.bytes(t))))
	})
	t.Run("garbage and other DIDs are skipped", func(t *testing.T) {
		t.Parallel()
		_, other := newDID(t)
		st := resolveAll(t, difSuffix, history([]byte("{"), other, difOperation(t, "create"), []byte(`{"type":"update"}`), difOperation(t, "update")))
		require.Equal(t, difUpdateNextCommit, st.UpdateCommitment)
	})
	t.Run("reusing a consumed update commitment is skipped", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t)
		k0 := d.id.UpdateKey
		u1 := d.update(t, service("1"))
		st1 := resolveAll(t, d.id.Suffix, history(create, u1))
		// u2 reveals k1 and commits back to k0, whose commitment was consumed by u1.
		u2, err := wallet.UpdateRequest(d.id.Suffix, d.id.UpdateKey, k0.Commitment(), service("2"))
		require.NoError(t, err)
		op2 := mustParse(t, u2)
		require.Equal(t, sidetree.CodeCommitmentReuse, sidetree.CodeOf(st1.Check(op2)))
		st := resolveAll(t, d.id.Suffix, history(create, u1, u2))
		require.Equal(t, st1.UpdateCommitment, st.UpdateCommitment)
		require.Equal(t, []string{"1"}, serviceIDs(st))
	})
	t.Run("reusing a consumed recovery commitment is skipped", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t)
		r0 := d.id.RecoveryKey
		r1 := d.recover(t, service("1"))
		st1 := resolveAll(t, d.id.Suffix, history(create, r1))
		next, err := wallet.GenerateKey(sidetree.ES256K, nil)
		require.NoError(t, err)
		r2, err := wallet.RecoverRequest(d.id.Suffix, d.id.RecoveryKey, r0.Commitment(), next.Commitment(), service("2"))
		require.NoError(t, err)
		require.Equal(t, sidetree.CodeCommitmentReuse, sidetree.CodeOf(st1.Check(mustParse(t, r2))))
		st := resolveAll(t, d.id.Suffix, history(create, r1, r2))
		require.Equal(t, []string{"1"}, serviceIDs(st))
	})
	t.Run("an operation in the create's anchor does not apply", func(t *testing.T) {
		t.Parallel()
		d, create := newDID(t)
		u := d.update(t, service("x"))
		st := resolveAll(t, d.id.Suffix, []sidetree.AnchoredOperation{{Sequence: 1, Position: 0, Request: create}, {Sequence: 1, Position: 1, Request: u}})
		require.Empty(t, serviceIDs(st))
	})
}

func TestOperationCacheStaysWithinItsBound(t *testing.T) {
	t.Parallel()
	d, create := newDID(t)
	bodies := [][]byte{create}
	for range 9 {
		bodies = append(bodies, d.update(t, service("s")))
	}
	ops := history(bodies...)
	// Room for about three of the ten requests.
	c := sidetree.NewOperationCache(sidetree.DefaultProfile(), 3*7*len(bodies[1]))
	want := sidetree.Resolve(sidetree.DefaultProfile(), d.id.Suffix, ops)
	for range 3 {
		require.Equal(t, want, c.Resolve(d.id.Suffix, ops))
		entries, bytes := c.Held()
		require.LessOrEqual(t, bytes, 3*7*len(bodies[1]))
		require.Positive(t, entries)
		require.Less(t, entries, len(bodies))
	}
}

// TestOperationCacheKeepsOnlyGrowingHistories: a DID with one operation is resolved without
// filling the cache; its create is kept once a second operation joins it.
func TestOperationCacheKeepsOnlyGrowingHistories(t *testing.T) {
	t.Parallel()
	d, create := newDID(t)
	c := sidetree.NewOperationCache(sidetree.DefaultProfile(), 0)
	require.Equal(t, sidetree.Resolve(sidetree.DefaultProfile(), d.id.Suffix, history(create)), c.Resolve(d.id.Suffix, history(create)))
	entries, _ := c.Held()
	require.Zero(t, entries)
	ops := history(create, d.update(t, service("s")))
	require.Equal(t, sidetree.Resolve(sidetree.DefaultProfile(), d.id.Suffix, ops), c.Resolve(d.id.Suffix, ops))
	entries, _ = c.Held()
	require.Equal(t, 2, entries)
}

func TestStateCheck(t *testing.T) {
	t.Parallel()
	p := sidetree.DefaultProfile()
	d, create := newDID(t)
	createOp := mustParse(t, create)
	saved := *d.id
	goodUpdate := mustParse(t, d.update(t, service("u")))
	*d.id = saved
	goodRecover := mustParse(t, d.recover(t))
	*d.id = saved
	goodDeactivate := mustParse(t, d.deactivate(t))

	// Operations revealing keys of another DID (valid signatures, wrong commitments).
	other, _ := newDID(t)
	foreignUpdate, err := wallet.UpdateRequest(d.id.Suffix, other.id.UpdateKey, other.id.RecoveryKey.Commitment())
	require.NoError(t, err)
	foreignDeactivate, err := wallet.DeactivateRequest(d.id.Suffix, other.id.RecoveryKey)
	require.NoError(t, err)
	// An update signed by the recovery key, a recover signed by the update key.
	crossUpdate, err := wallet.UpdateRequest(d.id.Suffix, saved.RecoveryKey, other.id.UpdateKey.Commitment())
	require.NoError(t, err)
	crossRecover, err := wallet.RecoverRequest(d.id.Suffix, saved.UpdateKey, other.id.RecoveryKey.Commitment(), other.id.UpdateKey.Commitment())
	require.NoError(t, err)

	active := sidetree.Resolve(p, d.id.Suffix, history(create))
	deactivated := sidetree.Resolve(p, d.id.Suffix, history(create, goodDeactivate.Request))
	_, otherCreate := newDID(t)
	otherState := sidetree.Resolve(p, mustParse(t, otherCreate).Suffix, history(otherCreate))

	for _, tc := range []struct {
		name  string
		state *sidetree.State
		op    *sidetree.Operation
		code  sidetree.Code
	}{
		{"create of a new DID", nil, createOp, ""},
		{"create of an existing DID", active, createOp, sidetree.CodeDIDAlreadyExists},
		{"update", active, goodUpdate, ""},
		{"recover", active, goodRecover, ""},
		{"deactivate", active, goodDeactivate, ""},
		{"update of an unknown DID", nil, goodUpdate, sidetree.CodeDIDNotFound},
		{"deactivate of an unknown DID", nil, goodDeactivate, sidetree.CodeDIDNotFound},
		{"update with another DID's state", otherState, goodUpdate, sidetree.CodeDIDNotFound},
		{"update of a deactivated DID", deactivated, goodUpdate, sidetree.CodeDIDDeactivated},
		{"recover of a deactivated DID", deactivated, goodRecover, sidetree.CodeDIDDeactivated},
		{"update with another key", active, mustParse(t, foreignUpdate), sidetree.CodeCommitmentMismatch},
		{"update with the recovery key", active, mustParse(t, crossUpdate), sidetree.CodeCommitmentMismatch},
		{"recover with the update key", active, mustParse(t, crossRecover), sidetree.CodeCommitmentMismatch},
		{"deactivate with another key", active, mustParse(t, foreignDeactivate), sidetree.CodeCommitmentMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.state.Check(tc.op)
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tc.code, sidetree.CodeOf(err), "%v", err)
		})
	}
}

func TestStateCheckLimits(t *testing.T) {
	t.Parallel()
	// Three operations anchored: create, two updates each adding a service.
	d, create := newDID(t, service("a"))
	u1 := d.update(t, service("b"))
	u2 := d.update(t, service("c"))
	p := sidetree.DefaultProfile()
	st := sidetree.Resolve(p, d.id.Suffix, history(create, u1, u2))
	require.Equal(t, 3, st.Operations)
	size := len(mustRender(t, st))

	saved := *d.id
	grow := mustParse(t, d.update(t, service("d")))
	*d.id = saved
	shrink := mustParse(t, d.update(t, wallet.RemoveServices("a", "b")))
	*d.id = saved
	recoverEmpty := mustParse(t, d.recover(t))
	*d.id = saved
	deactivate := mustParse(t, d.deactivate(t))

	for _, tc := range []struct {
		name     string
		maxOps   int
		maxBytes int
		state    *sidetree.State
		op       *sidetree.Operation
		code     sidetree.Code
	}{
		{"defaults", 0, 0, st, grow, ""},
		{"below the operation limit", 4, 0, st, grow, ""},
		{"at the operation limit", 3, 0, st, grow, sidetree.CodeTooManyOperations},
		{"a recover at the operation limit", 3, 0, st, recoverEmpty, sidetree.CodeTooManyOperations},
		{"a deactivate at the operation limit", 3, 0, st, deactivate, ""},
		{"an update that grows the document past the limit", 0, size, st, grow, sidetree.CodeDocumentTooLarge},
		{"an update that shrinks it", 0, size, st, shrink, ""},
		{"a recover to a small document", 0, size - 100, st, recoverEmpty, ""},
		{"a create above the limit", 0, 200, nil, mustParse(t, create), sidetree.CodeDocumentTooLarge},
		{"a create within it", 0, size, nil, mustParse(t, create), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := sidetree.DefaultProfile()
			p.MaxOperationsPerDID, p.MaxDocumentBytes = tc.maxOps, tc.maxBytes
			require.NoError(t, tc.state.Check(tc.op))
			err := tc.state.CheckLimits(p, tc.op)
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, tc.code, sidetree.CodeOf(err), "%v", err)
		})
	}

	// The size checked is the size resolution will render once the operation is anchored.
	after := sidetree.Resolve(p, d.id.Suffix, history(create, u1, u2, grow.Request))
	p.MaxDocumentBytes = len(mustRender(t, after))
	require.NoError(t, st.CheckLimits(p, grow))
	p.MaxDocumentBytes--
	require.Equal(t, sidetree.CodeDocumentTooLarge, sidetree.CodeOf(st.CheckLimits(p, grow)))
}

func mustRender(t *testing.T, st *sidetree.State) []byte {
	t.Helper()
	did, err := sidetree.ParseDID(sidetree.DefaultProfile(), "did:sidetree:"+st.Suffix)
	require.NoError(t, err)
	body, status := sidetree.RenderResolution(did, st)
	require.Equal(t, sidetree.ResolutionFound, status)
	return body
}

func TestInitialState(t *testing.T) {
	t.Parallel()
	st := sidetree.InitialState(mustParse(t, difOperation(t, "create")))
	require.False(t, st.Published)
	require.Equal(t, difUpdateCommit, st.UpdateCommitment)
	require.Len(t, st.Document.PublicKeys, 1)
	require.Nil(t, sidetree.InitialState(mustParse(t, difOperation(t, "update"))))
}
