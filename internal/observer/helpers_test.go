package observer

import (
	"context"

	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// testBatches reads the batch files the tests' observers (default profile) index, from st's CAS.
func testBatches(st store.Executor) *Batches {
	cs, err := cas.NewStore(cas.StoreConfig{}, st)
	if err != nil {
		panic(err)
	}
	b, err := NewBatches(BatchesConfig{Profile: sidetree.DefaultProfile()}, cs.FetchFunc)
	if err != nil {
		panic(err)
	}
	return b
}

// newTestResolver is NewResolver reading index rows' requests with testBatches.
func newTestResolver(p sidetree.Profile, st store.Executor, known *Known, stateCacheSize int) *Resolver {
	r := NewResolver(p, st, known, stateCacheSize)
	r.SetBatches(testBatches(st))
	return r
}

// historyOf is the index rows of suffix with their requests, as the resolver reads them.
func historyOf(ctx context.Context, st store.Executor, suffix string) ([]store.DIDOperation, error) {
	rows, err := st.DIDOperationList(ctx, suffix)
	if err != nil {
		return nil, err
	}
	return rows, testBatches(st).Requests(ctx, rows)
}
