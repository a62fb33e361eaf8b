package federation

import (
	"context"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/store"
)

// viewPeersMax bounds each list of the explorer's federation view.
const viewPeersMax = 1000

// Federation implements httpapi.FederationSource: the domain's accepted relationships, each
// with the state of the latest delivery we made to that peer.
func (s *Service) Federation(ctx context.Context) (httpapi.FederationView, error) {
	v := httpapi.FederationView{Enabled: true, Actor: s.actor}
	for _, l := range []struct {
		kind string
		into *[]httpapi.FederationPeer
	}{
		{store.RelationshipFollower, &v.Followers},
		{store.RelationshipFollowing, &v.Following},
		{store.RelationshipWitness, &v.Witnesses},
		{store.RelationshipWitnessing, &v.Witnessing},
	} {
		rs, err := s.st.RelationshipList(ctx, store.RelationshipListParams{Kind: l.kind, Status: store.RelationshipAccepted, Limit: viewPeersMax})
		if err != nil {
			return v, fmt.Errorf("federation view: %w", err)
		}
		*l.into = make([]httpapi.FederationPeer, 0, len(rs))
		for _, r := range rs {
			since := r.UpdatedAt
			peer := httpapi.FederationPeer{Actor: r.Actor, Since: &since}
			if peer.LastDelivery, err = s.lastDelivery(ctx, r.Actor); err != nil {
				return v, fmt.Errorf("federation view: %w", err)
			}
			*l.into = append(*l.into, peer)
		}
	}
	return v, nil
}

// lastDelivery is the state of the latest delivery to actor, nil when there is none on record.
func (s *Service) lastDelivery(ctx context.Context, actor string) (*httpapi.FederationDelivery, error) {
	d, err := s.st.ActivityDeliveryLatest(ctx, actor)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := &httpapi.FederationDelivery{Attempts: d.Attempts, Error: d.LastError}
	if a, err := s.st.ActivityOutboxGet(ctx, d.ActivityID); err == nil {
		out.Activity = a.Type
	}
	switch {
	case d.Status == store.DeliveryDelivered:
		out.State, out.At = httpapi.DeliveryDelivered, d.CreatedAt
		if d.DeliveredAt != nil {
			out.At = *d.DeliveredAt
		}
	case d.Status == store.DeliveryParked:
		out.State, out.At = httpapi.DeliveryParked, d.NextAttemptAt
	case d.Attempts > 0:
		out.State, out.At = httpapi.DeliveryRetrying, d.NextAttemptAt
	default:
		out.State, out.At = httpapi.DeliveryPending, d.CreatedAt
	}
	return out, nil
}
