package witness

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchor"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// Witnessing is the origin side: the anchor backend that offers each anchor to witnesses, the
// handler of their Accepts (proofs), and the anchor status monitor. See the package doc.
type Witnessing struct {
	cfg     Config
	st      store.Store
	post    PostTxFunc
	keys    KeysFunc
	requeue RequeueFunc
	// completed is called after a transaction that completed an anchor has committed (the
	// observer's wake-up).
	completed func(seq int64)
	m         *metrics
	// promises is the proof monitor, which checks a proof's log promise as the proof arrives;
	// nil without one (NewLogProofs sets it).
	promises *LogProofs

	mu  sync.Mutex
	rng *rand.Rand
}

// New returns the origin side of witnessing.
func New(cfg Config, st store.Store, post PostTxFunc, keys KeysFunc, requeue RequeueFunc, completed func(seq int64)) (*Witnessing, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if post == nil || keys == nil || requeue == nil {
		return nil, errors.New("new witnessing: outbox, key resolver and requeue are required")
	}
	if completed == nil {
		completed = func(int64) {}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &Witnessing{cfg: cfg, st: st, post: post, keys: keys, requeue: requeue, completed: completed, m: m,
		rng: rand.New(rand.NewChaCha8(seed))}, nil
}

// Name implements anchor.Backend.
func (w *Witnessing) Name() string { return store.AnchorBackendWitness }

// Anchor implements anchor.Backend: inside the batch writer's transaction it records the
// anchor as pending with the link and credential it offers, selects witnesses under the
// current policy and posts one Offer to them through the outbox. An anchor whose policy needs
// no witness completes at once; one for which too few witnesses are eligible waits, with no
// Offer, for the status monitor (which fails it after the deadline, giving its operations
// back).
func (w *Witnessing) Anchor(ctx context.Context, tx store.Executor, req anchor.Request, rec anchor.Record) (store.Anchor, error) {
	body, err := rec.Marshal()
	if err != nil {
		return store.Anchor{}, err
	}
	a, err := tx.AnchorInsert(ctx, store.AnchorInsertParams{
		AnchorString: req.AnchorString, CoreIndexCID: req.CoreIndexCID, OpCount: req.OpCount,
		Backend: w.Name(), Status: store.AnchorPending, Record: body, IssuedAt: rec.IssuedAt(),
	})
	if err != nil {
		return store.Anchor{}, err
	}
	offered, batchOrigins, err := w.offerable(ctx, tx, a, req, rec.Time)
	if err != nil {
		return store.Anchor{}, fmt.Errorf("witness anchor %d: %w", a.Seq, err)
	}
	policy, err := LoadPolicy(ctx, tx)
	if err != nil {
		return store.Anchor{}, err
	}
	candidates, err := w.candidates(ctx, tx, batchOrigins)
	if err != nil {
		return store.Anchor{}, err
	}
	selected, selErr := policy.Select(w.random(), candidates)
	if selErr != nil && !errors.Is(selErr, ErrWitnessesNotFound) {
		return store.Anchor{}, selErr
	}
	// The status monitor looks at an anchor once the witnesses asked had the grace period to
	// answer; one that could ask nobody has nobody to wait for, so at its next run.
	checkAfter := w.cfg.GracePeriod
	if selErr != nil {
		checkAfter = 0
	}
	if err := tx.WitnessAnchorInsert(ctx, offered, checkAfter); err != nil {
		return store.Anchor{}, err
	}
	rows := rowsOf(a.Seq, candidates)
	if selErr == nil && len(selected) == 0 && policy.Evaluate(candidates) {
		// Nothing to ask: the policy holds with this domain's own proof.
		for _, r := range rows {
			if err := tx.AnchorWitnessUpsert(ctx, r); err != nil {
				return store.Anchor{}, err
			}
		}
		done, err := tx.WitnessAnchorComplete(ctx, a.Seq)
		if err != nil {
			return store.Anchor{}, err
		}
		w.m.completed.Inc()
		store.OnCommit(ctx, func() { w.completed(a.Seq) })
		return done, nil
	}
	if selErr != nil {
		w.cfg.Logger.WarnContext(ctx, "too few eligible witnesses; the anchor waits for the status monitor",
			"anchor_seq", a.Seq, "policy", policy.String(), "candidates", len(candidates))
	}
	if err := w.offer(ctx, tx, offered, rows, actorsOf(selected), "first"); err != nil {
		return store.Anchor{}, err
	}
	return a, nil
}

// offerable builds what anchor a offers: its link (the did:orb layout), the credential without
// proofs, issued at the anchor's time, and this domain's proof. It also returns the other
// domains whose anchors hold a previous operation of a DID in the batch (the batch witnesses).
func (w *Witnessing) offerable(ctx context.Context, tx store.Executor, a store.Anchor, req anchor.Request, issued time.Time) (store.WitnessAnchor, []string, error) {
	id := w.cfg.Identity
	suffixes := make([]string, len(req.Ops))
	for i, op := range req.Ops {
		suffixes[i] = op.Suffix
	}
	previous, err := tx.DIDLatestAnchors(ctx, suffixes, a.Seq)
	if err != nil {
		return store.WitnessAnchor{}, nil, err
	}
	content := activity.AnchorContent{
		CoreIndex:  activity.NewHashlink(req.CoreIndex, id.Endpoint+"/cas/"+req.CoreIndexCID),
		Author:     id.ActorIRI,
		Operations: make([]activity.SuffixAnchor, len(suffixes)),
	}
	origins := map[int64]string{}
	var batchOrigins []string
	for i, s := range suffixes {
		content.Operations[i].Suffix = s
		ref, ok := previous[s]
		if !ok {
			continue
		}
		if _, seen := origins[ref.Seq]; !seen {
			prev, err := tx.AnchorGet(ctx, ref.Seq)
			if err != nil {
				return store.WitnessAnchor{}, nil, err
			}
			if prev.Origin == "" && prev.PublishedAt == nil {
				// An anchor of ours is named by its event's url, which it gets when the publisher
				// posts it, moments after it completes (a witnessed one holds its link's anchor
				// until then, a name no other domain knows it by); until then this batch cannot
				// name its parent.
				return store.WitnessAnchor{}, nil, fmt.Errorf("previous anchor %d of DID %s is not published yet", ref.Seq, s)
			}
			origins[ref.Seq] = prev.Origin
			if o := prev.Origin; o != "" && o != id.ActorIRI && !slices.Contains(batchOrigins, o) {
				batchOrigins = append(batchOrigins, o)
			}
		}
		if ref.Hashlink == "" {
			return store.WitnessAnchor{}, nil, fmt.Errorf("previous anchor %d of DID %s has no hashlink yet", ref.Seq, s)
		}
		content.Operations[i].Previous = ref.Hashlink
	}
	var nonce [16]byte
	_, _ = crand.Read(nonce[:])
	issued = issued.UTC()
	var cred *vc.Credential
	link, err := activity.BuildAnchorLink(content, w.cfg.MediaType, func(anchor, coreIndex string) ([]byte, error) {
		var err error
		cred, err = vc.NewAnchorCredential(vc.AnchorParams{
			ID: id.Endpoint + "/vc/" + hex.EncodeToString(nonce[:]), Issuer: id.DID, Issued: issued, HRef: anchor, Anchor: coreIndex,
		})
		if err != nil {
			return nil, err
		}
		return json.Marshal(cred)
	})
	if err != nil {
		return store.WitnessAnchor{}, nil, err
	}
	proof, err := vc.CreateProof(cred, id.Key, vc.ProofOptions{VerificationMethod: id.verificationMethod(), Domain: id.Endpoint, Created: issued})
	if err != nil {
		return store.WitnessAnchor{}, nil, err
	}
	linkJSON, err := json.Marshal(link)
	if err != nil {
		return store.WitnessAnchor{}, nil, err
	}
	credJSON, err := json.Marshal(cred)
	if err != nil {
		return store.WitnessAnchor{}, nil, err
	}
	proofJSON, err := json.Marshal(vc.NewProofAttachment(proof))
	if err != nil {
		return store.WitnessAnchor{}, nil, err
	}
	return store.WitnessAnchor{Seq: a.Seq, VCID: cred.ID(), Hashlink: link.Anchor, Link: linkJSON, Credential: credJSON,
		OriginProof: proofJSON}, batchOrigins, nil
}

// candidates lists the witnesses of an anchor: the batch witnesses, and the system witnesses
// (the domains that accepted our Invite). A domain that is both is listed once per role.
func (w *Witnessing) candidates(ctx context.Context, tx store.Executor, batchOrigins []string) ([]Witness, error) {
	var out []Witness
	for _, o := range batchOrigins {
		out = append(out, Witness{URI: o, Role: RoleBatch, HasLog: w.cfg.HasLog(o)})
	}
	const page = 500
	for offset := int64(0); ; offset += page {
		rs, err := tx.RelationshipList(ctx, store.RelationshipListParams{Kind: store.RelationshipWitness, Status: store.RelationshipAccepted, Offset: offset, Limit: page})
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Actor != w.cfg.Identity.ActorIRI {
				out = append(out, Witness{URI: r.Actor, Role: RoleSystem, HasLog: w.cfg.HasLog(r.Actor)})
			}
		}
		if len(rs) < page {
			return out, nil
		}
	}
}

// offer posts one Offer of anchor a to actors and records them as selected, with the rows of
// every other candidate, in tx.
func (w *Witnessing) offer(ctx context.Context, tx store.Executor, a store.WitnessAnchor, rows []store.AnchorWitness, actors []string, reason string) error {
	var offerID string
	now := time.Now().UTC()
	end := now.Add(w.cfg.MaxWitnessDelay)
	if len(actors) > 0 {
		var link activity.Link
		if err := json.Unmarshal(a.Link, &link); err != nil {
			return fmt.Errorf("offer anchor %d: read its link: %w", a.Seq, err)
		}
		to := append(slices.Clone(actors), activity.PublicIRI)
		var err error
		offerID, err = w.post(ctx, tx, &activity.Activity{
			Context:   activity.Strings{activity.ContextActivityStreams},
			Type:      activity.TypeOffer,
			Actor:     w.cfg.Identity.ActorIRI,
			To:        to,
			Target:    activity.IRIObject(activity.AnchorWitnessIRI),
			StartTime: &now,
			EndTime:   &end,
			Object:    &activity.Object{Linkset: &activity.Linkset{Linkset: []activity.Link{link}}},
		})
		if err != nil {
			return fmt.Errorf("offer anchor %d: %w", a.Seq, err)
		}
		w.m.offers.WithLabelValues(reason).Add(float64(len(actors)))
	}
	for _, r := range rows {
		if slices.Contains(actors, r.Actor) {
			r.Selected, r.OfferID, r.OfferedAt, r.OfferEnd = true, offerID, &now, &end
		}
		if err := tx.AnchorWitnessUpsert(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

func (w *Witnessing) random() *rand.Rand {
	w.mu.Lock()
	defer w.mu.Unlock()
	return rand.New(rand.NewPCG(w.rng.Uint64(), w.rng.Uint64()))
}

// rowsOf merges candidates (one per role) into one row per actor.
func rowsOf(seq int64, candidates []Witness) []store.AnchorWitness {
	var rows []store.AnchorWitness
	for _, c := range candidates {
		i := slices.IndexFunc(rows, func(r store.AnchorWitness) bool { return r.Actor == c.URI })
		if i < 0 {
			rows = append(rows, store.AnchorWitness{Seq: seq, Actor: c.URI, HasLog: c.HasLog})
			i = len(rows) - 1
		}
		switch c.Role {
		case RoleBatch:
			rows[i].Batch = true
		case RoleSystem:
			rows[i].System = true
		}
	}
	return rows
}

// witnessesOf turns rows back into the policy's view: one Witness per role.
func witnessesOf(rows []store.AnchorWitness) []Witness {
	var out []Witness
	for _, r := range rows {
		for role, has := range map[Role]bool{RoleBatch: r.Batch, RoleSystem: r.System} {
			if has {
				out = append(out, Witness{URI: r.Actor, Role: role, HasLog: r.HasLog, Selected: r.Selected, HasProof: r.ProofCounts(),
					LogVerified: r.PromiseVerifiedAt != nil && r.PromiseBrokenAt == nil})
			}
		}
	}
	slices.SortFunc(out, func(a, b Witness) int {
		if a.URI != b.URI {
			return strings.Compare(a.URI, b.URI)
		}
		return strings.Compare(string(a.Role), string(b.Role))
	})
	return out
}

func actorsOf(ws []Witness) []string {
	var out []string
	for _, w := range ws {
		if !slices.Contains(out, w.URI) {
			out = append(out, w.URI)
		}
	}
	return out
}
