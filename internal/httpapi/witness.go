package httpapi

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// WitnessReader reads the witnessing of this domain's anchors (the store).
type WitnessReader interface {
	WitnessAnchorGet(ctx context.Context, seq int64) (store.WitnessAnchor, error)
	AnchorWitnessList(ctx context.Context, seq int64) ([]store.AnchorWitness, error)
}

// WitnessView is one witness of an anchor: its roles, whether it was asked, and when its proof
// came.
type WitnessView struct {
	Actor     string     `json:"actor"`
	Roles     []string   `json:"roles"`
	HasLog    bool       `json:"hasLog,omitempty"`
	Selected  bool       `json:"selected"`
	OfferedAt *time.Time `json:"offeredAt,omitempty"`
	ProofAt   *time.Time `json:"proofAt,omitempty"`
}

// AnchorStatusInProcess is how a witnessed anchor that waits for proofs is shown (Orb's name).
const AnchorStatusInProcess = "in-process"

// withWitnesses adds a witnessed anchor's credential id and witnesses to v.
func withWitnesses(ctx context.Context, rd WitnessReader, v *AnchorView) error {
	if v.Backend != store.AnchorBackendWitness {
		return nil
	}
	wa, err := rd.WitnessAnchorGet(ctx, v.Seq)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	rows, err := rd.AnchorWitnessList(ctx, v.Seq)
	if err != nil {
		return err
	}
	v.Credential = wa.VCID
	if v.Status == store.AnchorPending {
		v.Status = AnchorStatusInProcess
	}
	v.Witnesses = make([]WitnessView, 0, len(rows))
	for _, r := range rows {
		var roles []string
		if r.Batch {
			roles = append(roles, "batch")
		}
		if r.System {
			roles = append(roles, "system")
		}
		v.Witnesses = append(v.Witnesses, WitnessView{Actor: r.Actor, Roles: slices.Clip(roles), HasLog: r.HasLog,
			Selected: r.Selected, OfferedAt: r.OfferedAt, ProofAt: r.ProofAt})
	}
	return nil
}
