package intake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkSubmitCreate is intake's own work for a create (parse, checks, response), with a queue
// that keeps it in memory. Creates are generated before the clock starts; run with -benchtime
// 5000x or so.
func BenchmarkSubmitCreate(b *testing.B) {
	bundle := setup(b)
	reqs := make([][]byte, b.N)
	for i := range reqs {
		_, req, err := bundle.wallet.Create()
		require.NoError(b, err)
		reqs[i] = req
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := bundle.svc.Submit(ctx, reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
}
