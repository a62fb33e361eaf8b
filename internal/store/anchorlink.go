package store

import (
	"context"
	"time"
)

// AnchorBackendFederation is the Backend of an anchor another domain made and this one
// observed: it is recorded completed and observed in one step, with its Origin and Hashlink.
const AnchorBackendFederation = "federation"

// AnchorRef is an anchor named by its place here and its hashlink.
type AnchorRef struct {
	Seq int64
	// Hashlink is the anchor's hashlink ("hl:…", the hash of its linkset's original content);
	// "" for an anchor of this domain that is not published yet.
	Hashlink string
}

// WaitingAnchor is another domain's anchor that cannot be applied yet because an anchor it
// builds on (a parent) is not applied here.
type WaitingAnchor struct {
	// Hashlink identifies the anchor (the linkset's anchor).
	Hashlink string
	// Origin is the actor IRI of the domain that made it; Sender the actor that delivered it
	// (the origin for a Create, a third domain for an Announce).
	Origin string
	Sender string
	// Live: it came in a live Create, so it is announced to our followers once applied.
	Live bool
	// WaitingFor is a parent hashlink that was not applied when the anchor was last tried.
	WaitingFor string
	// Event is the AnchorEvent as received (JSON), everything needed to apply it later.
	Event     []byte
	CreatedAt time.Time
}

// AnchorLinkExecutor holds what federation needs of anchors: hashlinks, origins, the published
// marker of this domain's anchors, and the anchors of other domains that wait for a parent.
type AnchorLinkExecutor interface {
	// AnchorNextToPublish returns this domain's anchor with the lowest sequence number that is
	// neither published nor failed, or ErrNotFound. It may be pending or not yet observed: the
	// caller then waits, because anchors are published in sequence order (each one's hashlink
	// depends on the hashlinks before it). A witnessed anchor still collecting proofs is passed
	// over: its link was fixed when it was offered, no later anchor names it as a parent (its
	// DIDs stay reserved until it is indexed), and it may wait for witnesses for minutes; it is
	// published when it completes. Inside a transaction on PostgreSQL the row is locked,
	// without skipping, so publishers take turns.
	AnchorNextToPublish(ctx context.Context) (Anchor, error)
	// AnchorMarkPublished records hashlink as the hashlink of this domain's anchor seq and marks
	// it published; ErrNotFound if it is not one of ours or was published already, so an anchor
	// is published once; ErrConflict if another anchor has that hashlink.
	AnchorMarkPublished(ctx context.Context, seq int64, hashlink string) error
	// AnchorsByHashlink returns, for each of hashlinks that names an anchor here, its sequence
	// number.
	AnchorsByHashlink(ctx context.Context, hashlinks []string) (map[string]int64, error)
	// DIDLatestAnchors returns, for each of suffixes with indexed operations in anchors before
	// beforeSeq, the latest such anchor.
	DIDLatestAnchors(ctx context.Context, suffixes []string, beforeSeq int64) (map[string]AnchorRef, error)

	// WaitingAnchorInsert records an anchor that waits for a parent; one already waiting under
	// that hashlink is left as it is.
	WaitingAnchorInsert(ctx context.Context, w WaitingAnchor) error
	// WaitingAnchorReady returns up to limit waiting anchors whose WaitingFor is now applied
	// here, oldest first.
	WaitingAnchorReady(ctx context.Context, limit int) ([]WaitingAnchor, error)
	// WaitingAnchorUpdate records that a waiting anchor now waits for another parent;
	// ErrNotFound if it no longer waits.
	WaitingAnchorUpdate(ctx context.Context, hashlink, waitingFor string) error
	// WaitingAnchorDelete removes a waiting anchor (applied, or dropped); ErrNotFound if it
	// does not wait.
	WaitingAnchorDelete(ctx context.Context, hashlink string) error
	// WaitingAnchorCount counts the waiting anchors, in total and from origin ("" for all).
	WaitingAnchorCount(ctx context.Context, origin string) (int, error)
}
