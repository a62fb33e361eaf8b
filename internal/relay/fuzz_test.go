package relay

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// FuzzHandlers feeds arbitrary bodies to the Create and Announce handlers of a domain that
// follows the sender: bad input is an error, never a panic, and nothing is indexed for it.
func FuzzHandlers(f *testing.F) {
	n := newNetwork()
	a := newDomain(f, n, "a", sqlite(f))
	b := newDomain(f, n, "b", sqlite(f))
	b.follow(a)
	w := wallet.New(wallet.Config{})
	x, create, err := w.Create()
	require.NoError(f, err)
	a.anchorOps(create)
	update, err := w.Update(x)
	require.NoError(f, err)
	a.anchorOps(update)
	for _, p := range a.publishAll() {
		f.Add(p.body)
	}
	require.NoError(f, b.deliver(a, a.sent()[0], true))
	f.Add(b.sent()[0].body)
	f.Add([]byte(`{"object":{"type":"AnchorEvent","url":"hl:uEiB"}}`))
	f.Add([]byte(`{"object":{"items":[{"type":"AnchorEvent"},null,1]}}`))
	f.Add([]byte(`{"object":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		act, _ := activity.Parse(body)
		in := Inbound{Activity: act, Body: body, Actor: a.id.ActorIRI, Live: true}
		_ = b.recv.HandleCreate(ctx, in)
		_ = b.recv.HandleAnnounce(ctx, in)
		if act != nil {
			raw, err := json.Marshal(act)
			require.NoError(t, err)
			in.Body = raw
			_ = b.recv.HandleCreate(ctx, in)
		}
	})
}
