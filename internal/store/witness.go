package store

import (
	"context"
	"time"
)

// AnchorBackendWitness is the Backend of this domain's anchors that witnesses must sign.
const AnchorBackendWitness = "witness"

// WitnessAnchor is one of this domain's anchors offered to witnesses: what was offered, so that
// every re-offer and the published anchor carry exactly the same credential. Its status is its
// anchor's (pending while proofs are collected).
type WitnessAnchor struct {
	Seq int64
	// VCID is the anchor credential's id (served at /vc/<last segment>).
	VCID string
	// Hashlink is the anchor's hashlink, the hash of the link's original content.
	Hashlink string
	// Link is the anchor link as offered (JSON); its replies hold Credential.
	Link []byte
	// Credential is the anchor credential without proofs (JSON), what every witness signs.
	Credential []byte
	// OriginProof is this domain's own proof of Credential (JSON).
	OriginProof []byte
	CreatedAt   time.Time
	// CheckAt is when the anchor status monitor looks at the anchor next.
	CheckAt time.Time
}

// AnchorWitness is one witness of one anchor: a candidate, and once asked, its Offer and proof.
type AnchorWitness struct {
	Seq   int64
	Actor string
	// Batch and System are the roles the witness has for this anchor (both may hold).
	Batch, System bool
	HasLog        bool
	// Selected: the witness was asked (an Offer was posted to it).
	Selected bool
	OfferID  string
	// OfferedAt is when the last Offer to it was posted; OfferEnd that Offer's endTime.
	OfferedAt *time.Time
	OfferEnd  *time.Time
	// Proof is the witness's proof (JSON), nil until its Accept arrived.
	Proof   []byte
	ProofAt *time.Time
	// Promise is where the witness said it logged the credential, nil if it named no log.
	// Once the proof monitor has checked it, PromiseVerifiedAt or PromiseBrokenAt is set.
	Promise           *LogPromise
	PromiseVerifiedAt *time.Time
	PromiseBrokenAt   *time.Time
}

// ProofCounts reports whether the witness's proof counts: it arrived and its log promise, if
// any, is not broken.
func (w AnchorWitness) ProofCounts() bool { return w.Proof != nil && w.PromiseBrokenAt == nil }

// LogPromise is a witness's promise, made in its AnchorReceipt, that the credential it signed
// is the entry at Index of its witness log Origin by Deadline (the receipt's endTime).
type LogPromise struct {
	Origin   string
	Index    int64
	Deadline time.Time
}

// Witnessed is an Offer this domain signed as a witness, and the Accept it answered with.
type Witnessed struct {
	OfferID  string
	Offerer  string
	Hashlink string
	VCID     string
	AcceptID string
	Proof    []byte
	// LogIndex is the credential's index in this domain's witness log; nil without a log.
	LogIndex  *int64
	CreatedAt time.Time
}

// WitnessExecutor holds the witnessing of anchors: this domain's anchors waiting for proofs
// (origin side) and the Offers it signed for others (witness side).
type WitnessExecutor interface {
	// WitnessAnchorInsert records an offered anchor; the monitor looks at it after checkAfter
	// (database clock). ErrConflict if the anchor or the credential id is recorded already.
	WitnessAnchorInsert(ctx context.Context, a WitnessAnchor, checkAfter time.Duration) error
	// WitnessAnchorGet returns the offered anchor seq, or ErrNotFound.
	WitnessAnchorGet(ctx context.Context, seq int64) (WitnessAnchor, error)
	// WitnessAnchorByVCID returns the offered anchor whose credential id is vcID, or ErrNotFound.
	WitnessAnchorByVCID(ctx context.Context, vcID string) (WitnessAnchor, error)
	// WitnessAnchorsDue returns up to limit offered anchors that are still pending and whose
	// CheckAt has come (database clock), earliest first.
	WitnessAnchorsDue(ctx context.Context, limit int) ([]WitnessAnchor, error)
	// WitnessAnchorComplete completes pending anchor seq (completed_at now) and gives it its
	// hashlink, in one statement, and returns it; ErrNotFound if it is not a pending offered
	// anchor. The hashlink is set only now so that a failed anchor's batch, cut again with the
	// same operations and so the same hashlink, can be recorded anew.
	WitnessAnchorComplete(ctx context.Context, seq int64) (Anchor, error)
	// WitnessAnchorSetCheck sets when the monitor looks at anchor seq next: database now +
	// after. ErrNotFound if it is not recorded.
	WitnessAnchorSetCheck(ctx context.Context, seq int64, after time.Duration) error

	// AnchorWitnessUpsert records a witness of an anchor, or replaces its roles, log flag,
	// selection and Offer; a proof already recorded is kept.
	AnchorWitnessUpsert(ctx context.Context, w AnchorWitness) error
	// AnchorWitnessList returns the witnesses of anchor seq, by actor.
	AnchorWitnessList(ctx context.Context, seq int64) ([]AnchorWitness, error)
	// AnchorWitnessAddProof records actor's proof of anchor seq unless one is recorded, and
	// reports whether it did; ErrNotFound if actor is not a witness of seq.
	AnchorWitnessAddProof(ctx context.Context, seq int64, actor string, proof []byte) (bool, error)
	// AnchorWitnessPromise records the log promise that came with actor's proof of anchor seq
	// (call it in the transaction that added the proof); ErrNotFound if actor has no proof of
	// seq.
	AnchorWitnessPromise(ctx context.Context, seq int64, actor string, p LogPromise) error
	// LogPromisesUnsettled returns up to limit witnesses whose proof came with a log promise
	// that is neither verified nor broken, oldest proof first.
	LogPromisesUnsettled(ctx context.Context, limit int) ([]AnchorWitness, error)
	// LogPromiseSettle marks actor's promise for anchor seq verified, or broken, now (database
	// clock), and reports whether it did: a promise is settled once, and a witness without an
	// unsettled promise is left alone.
	LogPromiseSettle(ctx context.Context, seq int64, actor string, broken bool) (bool, error)
	// LogPromisesBroken returns, by witness actor, how many of its log promises were broken;
	// witnesses without a broken promise are absent.
	LogPromisesBroken(ctx context.Context) (map[string]int64, error)

	// WitnessedInsert records an Offer this domain signed; ErrConflict if that Offer is
	// recorded already (it was answered before).
	WitnessedInsert(ctx context.Context, w Witnessed) error
	// WitnessedGet returns the record of Offer offerID, or ErrNotFound.
	WitnessedGet(ctx context.Context, offerID string) (Witnessed, error)
}
