package federation

import (
	"context"
	"net/http"
	"strings"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/httpapi"
)

// Orb's WebFinger properties for a did:orb resource: the domain that knows the DID's latest
// anchor, and how many resolvers a client should ask.
const (
	AnchorOriginProperty = "https://trustbloc.dev/ns/anchor-origin"
	MinResolversProperty = "https://trustbloc.dev/ns/min-resolvers"
)

// The Sidetree endpoints of a domain, as /.well-known/did-orb names them below its external
// endpoint, and the document's path.
const (
	ResolutionPath      = "/sidetree/v1/identifiers"
	OperationPath       = "/sidetree/v1/operations"
	WellKnownDIDOrbPath = "/.well-known/did-orb"
)

// DIDOrbEndpoints is /.well-known/did-orb: where a domain resolves did:orb DIDs and takes
// operations. Orb's resolver reads it to resolve a DID at its anchor origin, then asks the
// origin's WebFinger about the resolution endpoint.
type DIDOrbEndpoints struct {
	ResolutionEndpoint string `json:"resolutionEndpoint,omitempty"`
	OperationEndpoint  string `json:"operationEndpoint,omitempty"`
}

// DIDInfo is what this domain knows of a did:orb DID for Orb's DID discovery: its anchor origin
// ("" when it declares none and was anchored here) and the hashlink of its canonical anchor.
type DIDInfo struct {
	AnchorOrigin string
	Anchor       string
}

// DIDInfoFunc looks a did:orb DID up; ok is false when this domain does not know it (or has no
// canonical anchor for it yet).
type DIDInfoFunc func(ctx context.Context, did string) (info DIDInfo, ok bool, err error)

// RegisterDIDInfo makes WebFinger answer for did:orb resources (the did:orb profile) as Orb does:
// the anchor origin, the resolution URL (self), the canonical anchor's hashlink (via) and the
// actor (service). Register it before the server takes requests.
func (s *Service) RegisterDIDInfo(fn DIDInfoFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.didInfo = fn
}

func (s *Service) didInfoFunc() DIDInfoFunc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.didInfo
}

// getDIDOrb serves /.well-known/did-orb in the did:orb profile (once RegisterDIDInfo was
// called), as Orb serves it.
func (s *Service) getDIDOrb(w http.ResponseWriter, _ *http.Request) {
	if s.didInfoFunc() == nil {
		httpapi.WriteError(w, http.StatusNotFound, "not_found", "this domain does not resolve did:orb DIDs")
		return
	}
	writeJSON(w, http.StatusOK, "application/json", DIDOrbEndpoints{
		ResolutionEndpoint: s.cfg.ExternalEndpoint + ResolutionPath, OperationEndpoint: s.cfg.ExternalEndpoint + OperationPath,
	})
}

// endpointWebFinger answers WebFinger for the resolution or operation endpoint in the did:orb
// profile, as Orb does: the endpoint itself as the self link (no alternates: anchord has no
// discovery domains) and, for resolution, the number of resolvers a client should ask. ok is
// false for any other resource.
func (s *Service) endpointWebFinger(w http.ResponseWriter, res string) (ok bool) {
	if s.didInfoFunc() == nil {
		return false
	}
	doc := jrd{Subject: res, Links: []jrdLink{{Rel: "self", Href: res}}}
	switch res {
	case s.cfg.ExternalEndpoint + ResolutionPath:
		doc.Properties = map[string]any{MinResolversProperty: 1}
	case s.cfg.ExternalEndpoint + OperationPath:
	default:
		return false
	}
	writeJSON(w, http.StatusOK, mediaTypeJRD, doc)
	return true
}

// getDIDWebFinger answers WebFinger for a DID resource.
func (s *Service) getDIDWebFinger(w http.ResponseWriter, r *http.Request, did string) {
	fn := s.didInfoFunc()
	if fn == nil || !strings.HasPrefix(did, "did:orb:") {
		httpapi.WriteError(w, http.StatusNotFound, "not_found", "unknown resource")
		return
	}
	info, ok, err := fn(r.Context(), did)
	switch {
	case err != nil:
		s.cfg.Logger.WarnContext(r.Context(), "webfinger for a DID", "did", did, "error", err)
		httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", "the DID cannot be looked up now")
		return
	case !ok:
		httpapi.WriteError(w, http.StatusNotFound, "not_found", "unknown DID")
		return
	}
	origin := info.AnchorOrigin
	if origin == "" {
		origin = s.cfg.ExternalEndpoint
	}
	writeJSON(w, http.StatusOK, mediaTypeJRD, jrd{
		Properties: map[string]any{AnchorOriginProperty: origin, MinResolversProperty: 1},
		Links: []jrdLink{
			{Rel: "self", Type: "application/did+ld+json", Href: s.cfg.ExternalEndpoint + ResolutionPath + "/" + did},
			{Rel: "via", Type: "application/ld+json", Href: info.Anchor},
			{Rel: "service", Type: activity.MediaTypeActivity, Href: s.actor},
		},
	})
}
