package witness

import (
	"cmp"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/store"
)

// PolicyRoutes returns the admin API of the witness policy, served on the admin listener behind
// the admin token:
//
//	GET  /policy            the policy text (text/plain; empty for the default policy)
//	POST /policy            a policy text (text/plain): parsed, stored, answered in canonical form
//	GET  /admin/v1/policy   the same, under the prefix of anchord's other admin routes
//	POST /admin/v1/policy
//
// /policy is Orb's route, so that a script written against an Orb domain's policy endpoint
// works against anchord's admin listener; the CLI uses the /admin/v1 form like its other
// commands. A POST body is read up to MaxPolicyLength bytes (anything longer is refused by the
// parser); its Content-Type is not checked, since curl -d sends a form type for plain text.
func PolicyRoutes(st store.Store, logger *slog.Logger) func(mux httpapi.Router) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := policyAPI{st: st, logger: logger}
	return func(mux httpapi.Router) {
		for _, prefix := range []string{"", "/admin/v1"} {
			mux.HandleFunc("GET "+prefix+"/policy", a.get)
			mux.HandleFunc("POST "+prefix+"/policy", a.set)
		}
	}
}

type policyAPI struct {
	st     store.Store
	logger *slog.Logger
}

func (a policyAPI) get(w http.ResponseWriter, r *http.Request) {
	p, err := LoadPolicy(r.Context(), a.st)
	if err != nil {
		a.unavailable(w, r, err)
		return
	}
	writeText(w, p.String())
}

func (a policyAPI) set(w http.ResponseWriter, r *http.Request) {
	// One byte more than the parser accepts, so that an over-long body reaches the parser's
	// length check instead of being cut into a shorter policy.
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxPolicyLength+1))
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_policy", "read body: "+err.Error())
		return
	}
	// A file posted with curl --data-binary ends in a newline, which the space-separated
	// grammar would take as part of the last token; surrounding white space means nothing.
	p, err := Parse(strings.TrimSpace(string(body)))
	if err != nil {
		httpapi.WriteError(w, http.StatusBadRequest, "invalid_policy", err.Error())
		return
	}
	if err := SavePolicy(r.Context(), a.st, p); err != nil {
		a.unavailable(w, r, err)
		return
	}
	a.logger.InfoContext(r.Context(), "admin action", "action", "set witness policy", "policy", p.String(),
		"client", r.RemoteAddr, "token", cmp.Or(httpapi.TokenName(r.Context()), "none"))
	writeText(w, p.String())
}

// unavailable answers a store failure (or a stored policy that no longer parses, which the log
// names): 503, so that a client retries; posting a valid policy replaces a broken one.
func (a policyAPI) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	a.logger.ErrorContext(r.Context(), "witness policy admin", "error", err)
	w.Header().Set("Retry-After", "1")
	httpapi.WriteError(w, http.StatusServiceUnavailable, "unavailable", "witness policy unavailable")
}

func writeText(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, text)
}
