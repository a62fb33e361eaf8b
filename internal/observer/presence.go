package observer

import (
	"context"

	"github.com/anchord/anchord/internal/store"
)

// presence answers "does the per-DID index hold any operation of this suffix?" (the cluster's
// create path asks it before every create).
type presence struct{ group[int64] }

func newPresence(st store.Executor) *presence {
	return &presence{group[int64]{query: st.DIDLastAnchors}}
}

// has reports whether suffix has an operation in the per-DID index.
func (p *presence) has(ctx context.Context, suffix string) (bool, error) {
	_, found, err := p.get(ctx, suffix)
	return found, err
}
