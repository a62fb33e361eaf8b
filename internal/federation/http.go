package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/federation/outboxbody"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/httpsig"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/vc"
)

// Media types of the discovery documents.
const (
	mediaTypeJRD = "application/jrd+json"
	mediaTypeXRD = "application/xrd+xml"
)

// Routes returns the public routes of the service, served on the API listener: the actor and
// its key, discovery (host-meta, WebFinger, did:web), the inbox and the collections.
func (s *Service) Routes() func(mux httpapi.Router) {
	return func(mux httpapi.Router) {
		mux.HandleFunc("GET "+ServicePath, s.getActor)
		mux.HandleFunc("GET "+ServicePath+activity.PathMainKey, s.getKey)
		mux.HandleFunc("POST "+ServicePath+activity.PathInbox, s.postInbox)
		mux.HandleFunc("GET "+ServicePath+activity.PathInbox, s.getInbox)
		mux.HandleFunc("GET "+ServicePath+activity.PathOutbox, s.getOutbox)
		mux.HandleFunc("GET "+ServicePath+activity.PathFollowers, s.getRelationships(store.RelationshipFollower))
		mux.HandleFunc("GET "+ServicePath+activity.PathFollowing, s.getRelationships(store.RelationshipFollowing))
		mux.HandleFunc("GET "+ServicePath+activity.PathWitnesses, s.getRelationships(store.RelationshipWitness))
		mux.HandleFunc("GET "+ServicePath+activity.PathWitnessing, s.getRelationships(store.RelationshipWitnessing))
		mux.HandleFunc("GET "+ServicePath+activity.PathLiked, s.getLiked)
		mux.HandleFunc("GET "+ServicePath+"/activities/{id}", s.getActivity)
		mux.HandleFunc("GET /.well-known/host-meta.json", s.getHostMetaJSON)
		mux.HandleFunc("GET /.well-known/host-meta", s.getHostMeta)
		mux.HandleFunc("GET /.well-known/webfinger", s.getWebFinger)
		mux.HandleFunc("GET "+vc.WellKnownDIDPath, s.getDIDDocument)
		mux.HandleFunc("GET "+WellKnownDIDOrbPath, s.getDIDOrb)
	}
}

// InboxPath is the path of the inbox, whose bodies may be larger than the API's default limit.
func InboxPath() string { return ServicePath + activity.PathInbox }

func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, "internal_error", "encode response")
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Service) getActor(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, activity.MediaTypeActivity, activity.NewService(s.actor, s.pemKey))
}

func (s *Service) getKey(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, activity.MediaTypeActivity, keyDocument{ID: s.KeyID(), Owner: s.actor, PublicKeyPem: s.pemKey})
}

// keyDocument is what our key id dereferences to, as Orb serves it.
type keyDocument struct {
	ID           string `json:"id"`
	Owner        string `json:"owner"`
	PublicKeyPem string `json:"publicKeyPem"`
}

// postInbox takes an activity from another domain. The order of the checks is the design's:
// body cap (413, before any signature work); the body names its actor (400), whose host the
// signature's keyId must be on; signature (401), quota (429), actor = signer (401), shape (400),
// authorization (403); then the activity is stored, and 200 is answered only once that has
// committed. A copy of an activity already stored is answered 200 and changes nothing.
func (s *Service) postInbox(w http.ResponseWriter, r *http.Request) {
	body, typ, ok := s.readInbox(w, r)
	if !ok {
		return
	}
	claimed, ok := claimedActor(body)
	if !ok {
		s.refuse(w, r, "", http.StatusBadRequest, "invalid_activity", "the body is not an activity that names its actor", errors.New("no actor"))
		return
	}
	// readInbox put the same bytes back: the verifier checks the Digest against them.
	signer, err := s.verifier.VerifyFrom(r, claimed)
	if err != nil {
		s.refuseSignature(w, r, err)
		return
	}
	if !s.allowInbox(w, r, typ, signer.Owner) {
		return
	}
	a, err := activity.ParseWithLimits(body, activity.Limits{MaxBytes: int(s.cfg.MaxInboxBytes)})
	if err != nil {
		s.refuse(w, r, "", http.StatusBadRequest, "invalid_activity", "the activity does not parse or is not one anchord takes", err)
		return
	}
	if n := s.maxBytes(a.Type); int64(len(body)) > n {
		// The type read before the signature was another (a repeated or oddly cased member).
		s.tooLarge(w, r, a.Type, n)
		return
	}
	if a.Actor != signer.Owner {
		s.refuse(w, r, a.Type, http.StatusUnauthorized, "unauthorized", "the activity's actor is not the owner of the signing key",
			errors.New("the activity's actor is not the owner of the signing key"))
		return
	}
	if !sameOrigin(a.ID, a.Actor) {
		// Activities are recognised by id (a second copy is a no-op, a witness answers an Offer
		// once): an id on another domain's host would let one domain take another's.
		s.refuse(w, r, a.Type, http.StatusBadRequest, "invalid_activity", "the activity's id is not on its actor's host",
			errors.New("the activity's id is not on its actor's host"))
		return
	}
	in := Inbound{Activity: a, Body: body, Actor: a.Actor, From: signer.Owner, Source: SourceLive}
	if h, ok := s.handler(a.Type); ok && h.Authorize != nil {
		if err := h.Authorize(r.Context(), in); err != nil {
			switch {
			case errors.Is(err, errIgnored):
				// Taken and dropped: a sender that retries on a refusal would only repeat it.
				s.m.inbox.WithLabelValues(string(a.Type), "ignored").Inc()
				w.WriteHeader(http.StatusAccepted)
			case errors.Is(err, ErrForbidden):
				s.refuse(w, r, a.Type, http.StatusForbidden, "forbidden", "this actor may not post this "+string(a.Type)+" here", err)
			case errors.Is(err, activity.ErrInvalid):
				s.refuse(w, r, a.Type, http.StatusBadRequest, "invalid_activity", "this "+string(a.Type)+" is not one anchord takes", err)
			default:
				s.unavailable(w, r, "authorize inbox activity", err)
			}
			return
		}
	}
	seq, inserted, err := s.st.ActivityInboxInsert(r.Context(), store.ActivityInboxInsertParams{
		ActivityID: a.ID, Actor: a.Actor, From: signer.Owner, Type: string(a.Type), Body: body, Source: store.InboxSourceLive,
	})
	if err != nil {
		s.unavailable(w, r, "store inbox activity", err)
		return
	}
	if inserted {
		s.m.inbox.WithLabelValues(string(a.Type), "received").Inc()
		s.wake.inbox(strconv.FormatInt(seq, 10))
	} else {
		s.m.inbox.WithLabelValues(string(a.Type), "duplicate").Inc()
	}
	w.WriteHeader(http.StatusOK)
}

// claimedActor reads the actor an activity names, before anything else is known of it; ok is
// false when the body is not a JSON object with a string actor.
func claimedActor(body []byte) (string, bool) {
	var a struct {
		Actor string `json:"actor"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.Actor == "" {
		return "", false
	}
	return a.Actor, true
}

// keyUnverifiedMessage is the one answer to every failure of the signature's key: the log
// has the cause.
const keyUnverifiedMessage = "the signature could not be verified with its key"

func (s *Service) refuseSignature(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, httpsig.ErrKeyUnverified):
		// Whether the key's host answered, with what, or not at all is not told: the keyId is
		// an address of the sender's choosing.
		s.m.inbox.WithLabelValues("unknown", "refused").Inc()
		s.cfg.Logger.InfoContext(r.Context(), "signature key not verified", "client", r.RemoteAddr, "path", r.URL.Path, "error", err)
		w.Header().Set("WWW-Authenticate", `Signature realm="anchord",headers="(request-target) date digest"`)
		httpapi.WriteError(w, http.StatusUnauthorized, "unauthorized", keyUnverifiedMessage)
	case errors.Is(err, httpsig.ErrUnauthenticated):
		w.Header().Set("WWW-Authenticate", `Signature realm="anchord",headers="(request-target) date digest"`)
		s.refuse(w, r, "", http.StatusUnauthorized, "unauthorized", "the request's HTTP signature is not accepted", err)
	case errors.Is(err, httpsig.ErrBodyTooLarge):
		s.tooLarge(w, r, "", s.cfg.MaxInboxBytes)
	case errors.As(err, &tooBig):
		// A signed GET with a body over the server's limit for its path.
		s.tooLarge(w, r, "", tooBig.Limit)
	default:
		s.unavailable(w, r, "verify signature", err)
	}
}

// refuse answers a request we will not take: the body says why in words of ours (message), never
// with err, whose text may quote the client's input at length or name what a fetch found; err
// goes to the debug log.
func (s *Service) refuse(w http.ResponseWriter, r *http.Request, t activity.Type, status int, code, message string, err error) {
	s.m.inbox.WithLabelValues(typeLabel(t), "refused").Inc()
	s.cfg.Logger.DebugContext(r.Context(), "inbox request refused", "status", status, "client", r.RemoteAddr, "error", err)
	httpapi.WriteError(w, status, code, message)
}

func (s *Service) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.cfg.Logger.WarnContext(r.Context(), what, "error", err)
	w.Header().Set("Retry-After", "1")
	httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", what+": try again later")
}

// readerAllowed verifies a GET's signature and reports whether the signer may read our private
// collections: a follower or a witness of ours, as Orb allows, and a domain we follow — Orb's
// activity sync reads the inboxes of its followers to find its own Creates again, so a domain we
// follow must be able to read ours. It has answered the request when it returns false.
func (s *Service) readerAllowed(w http.ResponseWriter, r *http.Request) bool {
	signer, err := s.verifier.Verify(r)
	if err != nil {
		s.refuseSignature(w, r, err)
		return false
	}
	for _, kind := range []string{store.RelationshipFollower, store.RelationshipWitness, store.RelationshipFollowing} {
		ok, err := s.hasRelationship(r.Context(), kind, signer.Owner)
		if err != nil {
			s.unavailable(w, r, "authorize reader", err)
			return false
		}
		if ok {
			return true
		}
	}
	httpapi.WriteError(w, http.StatusForbidden, "forbidden", "only our followers, witnesses and the domains we follow may read this collection")
	return false
}

// page reads ?page=true&page-num=K: paged, and K (page 0 without a number: pages ascend).
func page(r *http.Request) (paged bool, num int, ok bool) {
	q := r.URL.Query()
	if q.Get("page") != "true" {
		return false, 0, true
	}
	v := q.Get("page-num")
	if v == "" {
		return true, 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1<<30 {
		return true, 0, false
	}
	return true, n, true
}

// serveCollection answers a collection GET: the summary, or page num of total items listed by
// list(offset, limit).
func (s *Service) serveCollection(w http.ResponseWriter, r *http.Request, id string, kind activity.Type,
	total func(ctx context.Context) (int64, error), list func(ctx context.Context, offset int64, limit int) ([]*activity.Object, error)) {
	paged, num, ok := page(r)
	if !ok {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_parameter", "page-num must be a non-negative integer")
		return
	}
	n, err := total(r.Context())
	if err != nil {
		s.unavailable(w, r, "count collection", err)
		return
	}
	size := s.cfg.PageSize
	if !paged {
		writeJSON(w, http.StatusOK, activity.MediaTypeActivity, activity.NewCollectionSummary(id, kind, int(n), size))
		return
	}
	items, err := list(r.Context(), int64(num)*int64(size), size)
	if err != nil {
		s.unavailable(w, r, "list collection", err)
		return
	}
	writeJSON(w, http.StatusOK, activity.MediaTypeActivity, activity.NewCollectionPage(id, kind, num, int(n), size, nonNil(items)))
}

func (s *Service) getOutbox(w http.ResponseWriter, r *http.Request) {
	// Only public activities, to anyone, as Orb serves its outbox to readers it does not know.
	s.serveCollection(w, r, s.actor+activity.PathOutbox, activity.TypeOrderedCollection,
		s.st.ActivityOutboxCountPublic,
		func(ctx context.Context, offset int64, limit int) ([]*activity.Object, error) {
			rows, err := s.st.ActivityOutboxListPublic(ctx, store.ActivityPageParams{After: offset, Limit: limit})
			if err != nil {
				return nil, err
			}
			items := make([]pageItem, len(rows))
			for i, row := range rows {
				items[i] = pageItem{id: row.ActivityID, body: row.Body, size: outboxbody.Size(row.Body)}
			}
			out := withinPageBytes(items)
			// Only the activities the page embeds are expanded: the linksets of the others
			// would be read for nothing.
			for i, o := range out {
				if o.Document == nil {
					continue
				}
				if o.Document, err = outboxbody.Expand(ctx, s.st, o.Document); err != nil {
					return nil, fmt.Errorf("outbox activity %s: %w", rows[i].ActivityID, err)
				}
			}
			return out, nil
		})
}

func (s *Service) getInbox(w http.ResponseWriter, r *http.Request) {
	if !s.readerAllowed(w, r) {
		return
	}
	s.serveCollection(w, r, s.actor+activity.PathInbox, activity.TypeOrderedCollection,
		s.st.ActivityInboxLastSeq,
		func(ctx context.Context, offset int64, limit int) ([]*activity.Object, error) {
			rows, err := s.st.ActivityInboxList(ctx, store.ActivityPageParams{After: offset, Limit: limit})
			if err != nil {
				return nil, err
			}
			items := make([]pageItem, len(rows))
			for i, row := range rows {
				items[i] = pageItem{id: row.ActivityID, body: row.Body, size: len(row.Body)}
			}
			return withinPageBytes(items), nil
		})
}

// PageBytesMax bounds what a collection page embeds. Pages keep their number of items (Orb's
// readers count pages by number), but once the embedded activities pass this size the rest of
// the page names them by IRI instead: an anchor's Create embeds its linkset, about 1.5 MB for
// 10,000 operations, and a page of 50 such Creates would pass what any reader accepts. A reader
// fetches an IRI item from the activity's own route.
const PageBytesMax = 4 << 20

type pageItem struct {
	id   string
	body []byte
	// size is the size of the activity the body stands for: an outbox body may be stored
	// without the linkset it embeds.
	size int
}

// withinPageBytes embeds items until PageBytesMax and names the rest by their ids.
func withinPageBytes(items []pageItem) []*activity.Object {
	out := make([]*activity.Object, len(items))
	size := 0
	for i, it := range items {
		size += it.size
		if size > PageBytesMax && i > 0 {
			out[i] = activity.IRIObject(it.id)
			continue
		}
		out[i] = &activity.Object{Document: it.body}
	}
	return out
}

func (s *Service) getRelationships(kind string) http.HandlerFunc {
	path := map[string]string{
		store.RelationshipFollower: activity.PathFollowers, store.RelationshipFollowing: activity.PathFollowing,
		store.RelationshipWitness: activity.PathWitnesses, store.RelationshipWitnessing: activity.PathWitnessing,
	}[kind]
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.readerAllowed(w, r) {
			return
		}
		s.serveCollection(w, r, s.actor+path, activity.TypeCollection,
			func(ctx context.Context) (int64, error) {
				return s.st.RelationshipCount(ctx, kind, store.RelationshipAccepted)
			},
			func(ctx context.Context, offset int64, limit int) ([]*activity.Object, error) {
				rs, err := s.st.RelationshipList(ctx, store.RelationshipListParams{Kind: kind, Status: store.RelationshipAccepted, Offset: offset, Limit: limit})
				if err != nil {
					return nil, err
				}
				out := make([]*activity.Object, len(rs))
				for i, x := range rs {
					out[i] = activity.IRIObject(x.Actor)
				}
				return out, nil
			})
	}
}

// getLiked serves an empty liked collection: anchord posts no Likes yet.
func (s *Service) getLiked(w http.ResponseWriter, r *http.Request) {
	if !s.readerAllowed(w, r) {
		return
	}
	s.serveCollection(w, r, s.actor+activity.PathLiked, activity.TypeOrderedCollection,
		func(context.Context) (int64, error) { return 0, nil },
		func(context.Context, int64, int) ([]*activity.Object, error) { return nil, nil })
}

// getActivity serves one public activity of our outbox.
func (s *Service) getActivity(w http.ResponseWriter, r *http.Request) {
	a, err := s.outboxGet(r.Context(), s.actor+"/activities/"+r.PathValue("id"))
	if err != nil || !a.Public {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			s.unavailable(w, r, "read activity", err)
			return
		}
		httpapi.WriteError(w, http.StatusNotFound, "not_found", "no such public activity")
		return
	}
	w.Header().Set("Content-Type", activity.MediaTypeActivity)
	_, _ = w.Write(a.Body)
}

// jrd is a JSON Resource Descriptor (host-meta, WebFinger).
type jrd struct {
	Subject    string         `json:"subject,omitempty"`
	Properties map[string]any `json:"properties,omitempty"`
	Links      []jrdLink      `json:"links"`
}

type jrdLink struct {
	Rel      string `json:"rel"`
	Type     string `json:"type,omitempty"`
	Href     string `json:"href,omitempty"`
	Template string `json:"template,omitempty"`
}

func (s *Service) hostMeta() jrd {
	return jrd{Links: []jrdLink{
		{Rel: "self", Type: mediaTypeJRD, Template: s.cfg.ExternalEndpoint + "/.well-known/webfinger?resource={uri}"},
		{Rel: "self", Type: activity.MediaTypeActivity, Href: s.actor},
	}}
}

func (s *Service) getHostMetaJSON(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, mediaTypeJRD, s.hostMeta())
}

// getHostMeta serves host-meta as JSON to a client that asks for JSON (as Orb's does), and as
// XRD otherwise, as RFC 6415 says.
func (s *Service) getHostMeta(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.Header.Get("Accept"), "json") {
		s.getHostMetaJSON(w, r)
		return
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<XRD xmlns="http://docs.oasis-open.org/ns/xri/xrd-1.0">` + "\n")
	for _, l := range s.hostMeta().Links {
		b.WriteString(`  <Link rel="` + xmlEscape(l.Rel) + `" type="` + xmlEscape(l.Type) + `"`)
		if l.Template != "" {
			b.WriteString(` template="` + xmlEscape(l.Template) + `"`)
		} else {
			b.WriteString(` href="` + xmlEscape(l.Href) + `"`)
		}
		b.WriteString("/>\n")
	}
	b.WriteString("</XRD>\n")
	w.Header().Set("Content-Type", mediaTypeXRD)
	_, _ = io.WriteString(w, b.String())
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

func xmlEscape(s string) string { return xmlEscaper.Replace(s) }

// getWebFinger answers for the domain and the actor: the actor as the self link and, when the
// domain keeps a witness log, the log as Orb advertises its own (a "vct" link and the
// ledger-type property), with our ledger type (peerlog.go says why it is not Orb's). In the
// did:orb profile it answers for DIDs and the Sidetree endpoints too (didinfo.go).
func (s *Service) getWebFinger(w http.ResponseWriter, r *http.Request) {
	res := r.URL.Query().Get("resource")
	if strings.HasPrefix(res, "did:") {
		s.getDIDWebFinger(w, r, res)
		return
	}
	if s.endpointWebFinger(w, res) {
		return
	}
	switch strings.TrimRight(res, "/") {
	case s.cfg.ExternalEndpoint, s.actor:
	default:
		httpapi.WriteError(w, http.StatusNotFound, "not_found", "unknown resource")
		return
	}
	doc := jrd{
		Subject: res,
		Links:   []jrdLink{{Rel: "self", Type: activity.MediaTypeActivity, Href: s.actor}},
	}
	if s.cfg.WitnessLog {
		doc.Properties = map[string]any{LedgerTypeProperty: LedgerTypeTLogTiles}
		doc.Links = append(doc.Links, jrdLink{Rel: LogRelation, Href: s.cfg.ExternalEndpoint + LogPath})
	}
	writeJSON(w, http.StatusOK, mediaTypeJRD, doc)
}

// getDIDDocument serves the domain's did:web document with the domain key, which signs the
// anchor credentials.
func (s *Service) getDIDDocument(w http.ResponseWriter, r *http.Request) {
	did, err := vc.DIDWeb(s.cfg.ExternalEndpoint)
	if err == nil {
		var doc *vc.DIDDocument
		if doc, err = vc.NewDIDDocument(did, s.pub); err == nil {
			writeJSON(w, http.StatusOK, "application/did+json", doc)
			return
		}
	}
	s.cfg.Logger.WarnContext(r.Context(), "did:web document", "error", err)
	httpapi.WriteError(w, http.StatusNotFound, "not_found", "this domain has no did:web identifier")
}

// publishedBefore reports whether a's published time is before t; an activity without one is
// taken as old.
func publishedBefore(a *activity.Activity, t time.Time) bool {
	return a.Published == nil || a.Published.Before(t)
}
