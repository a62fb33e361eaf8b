package storetest

import (
	"cmp"
	"context"
	"slices"

	"github.com/anchord/anchord/internal/store"
)

// Indexer indexes operations the way the observer does, for tests of what reads the per-DID
// index: the rows, then each DID's state (test bytes, which no store reads) naming the positions
// of every operation of the DID it indexed. A store without an index by suffix finds a DID's
// rows only through them.
type Indexer struct {
	positions map[string][]store.DIDPosition
}

// Index indexes ops in ex, a store or a transaction.
func (x *Indexer) Index(ctx context.Context, ex store.Executor, ops []store.DIDOperation) error {
	if x.positions == nil {
		x.positions = map[string][]store.DIDPosition{}
	}
	if err := ex.DIDOperationInsertMany(ctx, ops); err != nil {
		return err
	}
	changed := map[string]bool{}
	for _, op := range ops {
		x.positions[op.Suffix] = append(x.positions[op.Suffix], store.DIDPosition{AnchorSeq: op.AnchorSeq, Index: op.Index})
		changed[op.Suffix] = true
	}
	states := make([]store.DIDState, 0, len(changed))
	for s := range changed {
		pos := x.positions[s]
		slices.SortFunc(pos, func(a, b store.DIDPosition) int {
			return cmp.Or(cmp.Compare(a.AnchorSeq, b.AnchorSeq), cmp.Compare(a.Index, b.Index))
		})
		x.positions[s] = slices.Compact(pos)
		states = append(states, store.DIDState{Suffix: s, State: []byte("state of " + s), Positions: x.positions[s]})
	}
	return ex.DIDStatePutMany(ctx, states)
}
