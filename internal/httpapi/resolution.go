package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
)

// Media types of DID resolution (DID Core §6, DID Resolution §7).
const (
	// mediaResolution is a DID resolution result: document, document metadata and resolution
	// metadata.
	mediaResolution   = `application/ld+json;profile="https://w3id.org/did-resolution"`
	profileResolution = "https://w3id.org/did-resolution"
	// mediaDIDLD and mediaDIDJSON are a DID document alone, as JSON-LD or plain JSON.
	mediaDIDLD   = "application/did+ld+json"
	mediaDIDJSON = "application/did+json"
	// resolutionContext is the @context of a resolution result.
	resolutionContext = "https://w3id.org/did-resolution/v1"
)

// representation is what a resolution request asked for.
type representation int

const (
	// repDefault: no preference. The Sidetree API answers with the reference implementation's
	// result, byte for byte; the Universal Resolver path with a full resolution result.
	repDefault representation = iota
	repResolution
	repDocumentLD
	repDocumentJSON
)

// contentType returns the Content-Type of a representation, as a header's values.
func (r representation) contentType() []string {
	switch r {
	case repResolution:
		return contentResolution
	case repDocumentJSON:
		return contentDIDJSON
	}
	return contentDIDLD
}

// The values of the headers every resolution sets, set as they are rather than through
// Header.Set, which canonicalizes the name and allocates the values each time. They are shared
// by all responses: a header's values are only read, or replaced (Set, Add and append make a
// slice of their own, as the length is the capacity).
var (
	varyAccept        = []string{"Accept"}
	contentResolution = []string{mediaResolution}
	contentDIDLD      = []string{mediaDIDLD}
	contentDIDJSON    = []string{mediaDIDJSON}
)

// maxAcceptRanges bounds the media ranges of an Accept header that negotiate looks at; the
// header itself is bounded by the server's MaxHeaderBytes.
const maxAcceptRanges = 32

// negotiate picks the representation an Accept header prefers: the highest q, then the most
// specific range, then the earliest. ok is false when the header accepts none of them (406).
func negotiate(accept string) (rep representation, ok bool) {
	if strings.TrimSpace(accept) == "" {
		return repDefault, true
	}
	type choice struct {
		rep         representation
		q           float64
		specificity int
	}
	var best *choice
	for i, part := range splitMediaRanges(accept) {
		if i == maxAcceptRanges {
			break
		}
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
				continue
			}
		}
		if q == 0 {
			continue
		}
		c := choice{q: q, specificity: 2}
		switch {
		case mt == "application/ld+json" && strings.TrimSuffix(params["profile"], "/") == profileResolution,
			mt == "application/did-resolution":
			c.rep, c.specificity = repResolution, 3
		case mt == mediaDIDLD:
			c.rep = repDocumentLD
		case mt == mediaDIDJSON, mt == "application/did":
			c.rep = repDocumentJSON
		case mt == "application/ld+json", mt == "application/json":
			c.rep, c.specificity = repDefault, 1
		case mt == "application/*", mt == "*/*":
			c.rep, c.specificity = repDefault, 0
		default:
			continue
		}
		if best == nil || c.q > best.q || (c.q == best.q && c.specificity > best.specificity) {
			best = &c
		}
	}
	if best == nil {
		return repDefault, false
	}
	return best.rep, true
}

// splitMediaRanges splits an Accept header at the commas that are not inside a quoted string
// (a profile URI may hold one).
func splitMediaRanges(h string) []string {
	var parts []string
	quoted, start := false, 0
	for i := 0; i < len(h); i++ {
		switch h[i] {
		case '\\':
			if quoted {
				i++
			}
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				parts = append(parts, strings.TrimSpace(h[start:i]))
				start = i + 1
			}
		}
	}
	return append(parts, strings.TrimSpace(h[start:]))
}

// versionQuery is a request's versionId and versionTime (DID Resolution's resolution options,
// as Orb reads them from the query string).
type versionQuery struct {
	id   string
	time time.Time
}

func (v versionQuery) set() bool { return v.id != "" || !v.time.IsZero() }

// errBothVersions refuses a resolution that asks for a versionId and a versionTime.
var errBothVersions = errors.New("give versionId or versionTime, not both")

// parseVersionQuery reads versionId and versionTime. versionTime is an RFC 3339 time; the
// metadata's created and updated are written in whole seconds, and either can be passed back.
func parseVersionQuery(r *http.Request) (versionQuery, error) {
	if r.URL.RawQuery == "" {
		// Most resolutions: Query would make a map to find nothing in it.
		return versionQuery{}, nil
	}
	q := r.URL.Query()
	v := versionQuery{id: q.Get("versionId")}
	if len(v.id) > 200 {
		return v, errors.New("versionId is longer than 200 characters")
	}
	if s := q.Get("versionTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return v, errors.New("versionTime must be an RFC 3339 time such as 2026-01-02T03:04:05Z")
		}
		v.time = t
	}
	if v.id != "" && !v.time.IsZero() {
		return v, errBothVersions
	}
	return v, nil
}

// resolved is the outcome of one resolution, before it is written in a representation.
type resolved struct {
	body   []byte // the resolution result; nil when not found
	status sidetree.ResolutionStatus
}

// resolve runs the resolution a request asks for: the reference implementation's result (fast,
// cached) when nothing beyond it was asked, else the result with DID Resolution's metadata.
func (c SidetreeConfig) resolve(r *http.Request, did string, rep representation, v versionQuery, full bool) (resolved, error) {
	if !full && rep == repDefault && !v.set() {
		body, status, err := c.Resolver.Resolve(r.Context(), did)
		return resolved{body, status}, err
	}
	body, status, err := c.Resolver.ResolveVersion(r.Context(), did, v.id, v.time)
	return resolved{body, status}, err
}

// getIdentifier is GET /sidetree/v1/identifiers/{did}: the Sidetree REST API's resolution, with
// content negotiation and versions. Errors have the API's {"code","message"} body.
func (c SidetreeConfig) getIdentifier(w http.ResponseWriter, r *http.Request) {
	rep := repDefault
	if !c.Orb {
		// Orb's answer is the same whatever the Accept (see orb.go).
		w.Header()["Vary"] = varyAccept
		var ok bool
		if rep, ok = negotiate(r.Header.Get("Accept")); !ok {
			WriteError(w, http.StatusNotAcceptable, "representation_not_supported",
				"acceptable: "+mediaResolution+", "+mediaDIDLD+", "+mediaDIDJSON)
			return
		}
	}
	v, err := parseVersionQuery(r)
	if err != nil {
		if errors.Is(err, errBothVersions) && c.Orb {
			err = errors.New(orbBothVersions)
		}
		c.writeError(w, http.StatusBadRequest, "invalid_parameter", err.Error())
		return
	}
	did := r.PathValue("did")
	res, err := c.resolve(r, did, rep, v, false)
	if err != nil {
		// Declared here, not before: errors.As takes its address, which puts it on the heap
		// for every request that declares it.
		var se *sidetree.Error
		switch {
		case errors.As(err, &se) && c.Orb:
			c.writeOrbInvalidDID(w, did)
		case errors.As(err, &se):
			WriteError(w, http.StatusBadRequest, string(se.Code), se.Message)
		case c.VersionNotFound != nil && errors.Is(err, c.VersionNotFound):
			c.writeError(w, http.StatusNotFound, "version_not_found", "the DID has no such version")
		default:
			c.Logger.ErrorContext(r.Context(), "resolve", "error", err)
			w.Header().Set("Retry-After", "1")
			c.writeError(w, http.StatusServiceUnavailable, "unavailable", "resolution unavailable")
		}
		return
	}
	switch {
	case res.status == sidetree.ResolutionNotFound && c.Orb:
		writeOrbText(w, http.StatusNotFound, orbTextPlain, orbDocumentNotFound)
		return
	case res.status == sidetree.ResolutionNotFound:
		WriteError(w, http.StatusNotFound, "not_found", "DID not found")
		return
	case res.status == sidetree.ResolutionDeactivated && c.Orb:
		// Orb answers a deactivated DID like any other; its metadata says it is deactivated.
		res.status = sidetree.ResolutionFound
	}
	c.writeResolved(w, r, res, rep)
}

// getDriverIdentifier is GET /1.0/identifiers/{did}, the Universal Resolver driver interface:
// by default a full resolution result; errors are resolution results too, with
// didResolutionMetadata.error set to DID Resolution's error names and the driver contract's
// status codes (400 invalidDid, 404 notFound, 406 representationNotSupported, 410 for a
// deactivated DID with its result, 501 methodNotSupported, 500 internalError).
func (c SidetreeConfig) getDriverIdentifier(w http.ResponseWriter, r *http.Request) {
	w.Header()["Vary"] = varyAccept
	rep, ok := negotiate(r.Header.Get("Accept"))
	if !ok {
		writeResolutionError(w, http.StatusNotAcceptable, "representationNotSupported",
			"acceptable: "+mediaResolution+", "+mediaDIDLD+", "+mediaDIDJSON)
		return
	}
	if rep == repDefault {
		rep = repResolution
	}
	v, err := parseVersionQuery(r)
	if err != nil {
		writeResolutionError(w, http.StatusBadRequest, "invalidOptions", err.Error())
		return
	}
	did := r.PathValue("did")
	if method, ok := didMethod(did); ok && c.DIDMethod != "" && !strings.HasPrefix(did, "did:"+c.DIDMethod+":") {
		writeResolutionError(w, http.StatusNotImplemented, "methodNotSupported",
			"this node resolves did:"+c.DIDMethod+", not did:"+method)
		return
	}
	res, err := c.resolve(r, did, rep, v, true)
	if err != nil {
		var se *sidetree.Error // declared here for the reason getIdentifier gives
		switch {
		case errors.As(err, &se):
			writeResolutionError(w, http.StatusBadRequest, "invalidDid", se.Message)
		case c.VersionNotFound != nil && errors.Is(err, c.VersionNotFound):
			writeResolutionError(w, http.StatusNotFound, "notFound", "the DID has no such version")
		default:
			c.Logger.ErrorContext(r.Context(), "resolve", "error", err)
			w.Header().Set("Retry-After", "1")
			writeResolutionError(w, http.StatusInternalServerError, "internalError", "resolution unavailable")
		}
		return
	}
	if res.status == sidetree.ResolutionNotFound {
		writeResolutionError(w, http.StatusNotFound, "notFound", "DID not found")
		return
	}
	c.writeResolved(w, r, res, rep)
}

// didMethod returns the method segment of something that looks like a DID.
func didMethod(s string) (string, bool) {
	rest, ok := strings.CutPrefix(s, "did:")
	if !ok {
		return "", false
	}
	method, _, ok := strings.Cut(rest, ":")
	return method, ok && method != ""
}

// writeResolved writes a found or deactivated DID (200 or 410) in the representation asked for.
func (c SidetreeConfig) writeResolved(w http.ResponseWriter, r *http.Request, res resolved, rep representation) {
	status := http.StatusOK
	if res.status == sidetree.ResolutionDeactivated {
		status = http.StatusGone
	}
	body := res.body
	switch rep {
	case repResolution:
		body = withResolutionMetadata(body, mediaDIDLD)
	case repDocumentLD, repDocumentJSON:
		var result struct {
			Document json.RawMessage `json:"didDocument"`
		}
		if err := json.Unmarshal(body, &result); err != nil || len(result.Document) == 0 {
			c.Logger.ErrorContext(r.Context(), "resolution result without a document", "error", err)
			WriteError(w, http.StatusInternalServerError, "internal_error", "internal error")
			return
		}
		body = result.Document
	}
	w.Header()["Content-Type"] = rep.contentType()
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// withResolutionMetadata adds didResolutionMetadata to a resolution result (a JSON object the
// resolver rendered, so it ends in '}').
func withResolutionMetadata(result []byte, contentType string) []byte {
	result = bytes.TrimRight(result, " \n")
	if len(result) < 2 || result[len(result)-1] != '}' {
		return result
	}
	meta, _ := json.Marshal(map[string]string{"contentType": contentType})
	out := make([]byte, 0, len(result)+len(meta)+32)
	out = append(out, result[:len(result)-1]...)
	out = append(out, `,"didResolutionMetadata":`...)
	out = append(out, meta...)
	return append(out, '}')
}

// ResolutionError is the body of an error on the Universal Resolver path: a resolution result
// with no document and the error in its resolution metadata.
type ResolutionError struct {
	Context          string              `json:"@context"`
	Document         *struct{}           `json:"didDocument"`
	ResolutionMeta   ResolutionErrorMeta `json:"didResolutionMetadata"`
	DocumentMetadata struct{}            `json:"didDocumentMetadata"`
}

// ResolutionErrorMeta names the error (DID Resolution's error names, such as notFound).
type ResolutionErrorMeta struct {
	Error        string `json:"error"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

func writeResolutionError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(ResolutionError{Context: resolutionContext, ResolutionMeta: ResolutionErrorMeta{Error: code, ErrorMessage: message}})
	w.Header().Set("Content-Type", mediaResolution)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
