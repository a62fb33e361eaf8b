package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/anchord/anchord/internal/sidetree"
)

// In the did:orb profile (SidetreeConfig.Orb) the Sidetree path and /cas answer as Orb's REST
// handlers do, so that Orb's clients, which read the status and keep the body as the error's
// text, cannot tell the domain from an Orb domain:
//
//   - errors are text/plain: "bad request: <reason>" for a refused operation, "document not
//     found" for a DID not found (or a did:orb name that names none), "no content at <cid> was
//     found: content not found" on /cas, as "text/plain; charset=utf-8";
//   - an accepted operation other than a create answers `null` as application/did+ld+json;
//   - resolution ignores Accept (Orb's clients send application/did+ld+json and expect the
//     resolution result), and a deactivated DID is a 200 with its metadata saying so.
//
// Where Orb answers a client's bad input with a 500 (a DID of another method, an unparsable
// versionTime, an unknown versionId) anchord keeps its 4xx, with Orb's wording where it has one.

// Orb's texts.
const (
	orbBadRequest       = "bad request: "
	orbDocumentNotFound = "document not found"
	orbBothVersions     = "cannot specify both 'versionId' and 'versionTime'"
	// orbTextPlain is the Content-Type of Orb's Sidetree errors; its /cas writes its errors
	// without one, and Go's server names them orbTextSniffed.
	orbTextPlain   = "text/plain"
	orbTextSniffed = "text/plain; charset=utf-8"
)

// orbWording is Orb's message for refusals whose text Orb writes differently.
var orbWording = map[sidetree.Code]string{
	sidetree.CodeDIDNotFound: "create operation not found",
}

// writeOrbText writes an Orb-style text error, cut to MaxMessageBytes as WriteError cuts.
func writeOrbText(w http.ResponseWriter, status int, contentType, text string) {
	if len(text) > MaxMessageBytes {
		n := MaxMessageBytes - len("...")
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n] + "..."
	}
	w.Header().Set("Content-Type", contentType)
	// The text may quote the request (a CID); it is never to be read as anything but text.
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text))
}

// writeError writes an error of the Sidetree path: {"code","message"}, or in the did:orb
// profile Orb's text, the message.
func (c SidetreeConfig) writeError(w http.ResponseWriter, status int, code, message string) {
	if !c.Orb {
		WriteError(w, status, code, message)
		return
	}
	writeOrbText(w, status, orbTextPlain, message)
}

// writeRefused writes the 400 of an operation refused: in the did:orb profile "bad request:
// <message>", as Orb's operations handler writes it (its resolution handler does not prefix).
func (c SidetreeConfig) writeRefused(w http.ResponseWriter, code, message string) {
	if c.Orb {
		if m, ok := orbWording[sidetree.Code(code)]; ok {
			message = m
		}
		message = orbBadRequest + message
	}
	c.writeError(w, http.StatusBadRequest, code, message)
}

// writeOrbInvalidDID answers, in the did:orb profile, a resolution of something that is not a
// DID anchord can read: one of another method (or none) is refused as Orb words it, with a 400
// where Orb answers 500; a malformed did:orb name is not found, as at Orb, which looks it up.
func (c SidetreeConfig) writeOrbInvalidDID(w http.ResponseWriter, did string) {
	if !strings.HasPrefix(did, "did:"+c.DIDMethod+":") {
		writeOrbText(w, http.StatusBadRequest, orbTextPlain, fmt.Sprintf("did method not supported for id[%s]", did))
		return
	}
	writeOrbText(w, http.StatusNotFound, orbTextPlain, orbDocumentNotFound)
}

// writeOrbCASNotFound answers a CID that names no content (or is no CID) as Orb's /cas does.
func writeOrbCASNotFound(w http.ResponseWriter, cid string) {
	writeOrbText(w, http.StatusNotFound, orbTextSniffed, fmt.Sprintf("no content at %s was found: content not found", cid))
}
