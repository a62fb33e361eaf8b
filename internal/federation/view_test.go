package federation

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// TestFederationViewShowsRelationshipsAndDeliveries: the explorer's view lists each accepted
// relationship once, with the state of the latest delivery to the peer.
func TestFederationViewShowsRelationshipsAndDeliveries(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	s := &Service{st: st, actor: "https://a.example/services/anchord"}
	for _, r := range []store.RelationshipUpsertParams{
		{Kind: store.RelationshipFollower, Actor: "https://b.example/services/anchord", Status: store.RelationshipAccepted, ActivityID: "https://b.example/f1"},
		{Kind: store.RelationshipFollowing, Actor: "https://c.example/services/orb", Status: store.RelationshipAccepted, ActivityID: "https://a.example/f2"},
		{Kind: store.RelationshipFollowing, Actor: "https://d.example/services/orb", Status: store.RelationshipPending, ActivityID: "https://a.example/f3"},
	} {
		require.NoError(t, st.RelationshipUpsert(ctx, r))
	}
	_, err := st.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{
		ActivityID: "https://a.example/activities/1", Type: "Create", Body: []byte("{}"), Public: true,
		Recipients: []string{"https://b.example/services/anchord"},
	})
	require.NoError(t, err)

	v, err := s.Federation(ctx)
	require.NoError(t, err)
	require.True(t, v.Enabled)
	require.Len(t, v.Followers, 1)
	require.Equal(t, "https://b.example/services/anchord", v.Followers[0].Actor)
	require.NotNil(t, v.Followers[0].LastDelivery)
	require.Equal(t, httpapi.DeliveryPending, v.Followers[0].LastDelivery.State)
	require.Equal(t, "Create", v.Followers[0].LastDelivery.Activity)
	require.Len(t, v.Following, 1, "only accepted relationships")
	require.Nil(t, v.Following[0].LastDelivery)
	require.Empty(t, v.Witnesses)
	require.NotNil(t, v.Witnessing)
}
