package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// TokenAuth checks bearer tokens per path the way Orb's --auth-tokens-def and --auth-tokens do:
// definitions are "<path-regex>|<read tokens>|<write tokens>" where token lists are names joined
// by "&"; the first definition whose (unanchored) pattern matches the path decides; GET and HEAD
// need one of its read tokens, every other method one of its write tokens; a definition with no
// token for the method, or a path no definition matches, is open.
type TokenAuth struct {
	defs   []tokenDef
	tokens map[string]string // name → secret
}

type tokenDef struct {
	pattern *regexp.Regexp
	read    []string
	write   []string
}

// ParseTokenAuth reads --auth-tokens-def (defs) and --auth-tokens (tokens, "name=secret,…").
// Every name a definition uses must have a secret. Empty defs give an auth that lets
// everything through.
func ParseTokenAuth(defs, tokens string) (*TokenAuth, error) {
	a := &TokenAuth{tokens: map[string]string{}}
	for _, kv := range splitList(tokens) {
		name, secret, ok := strings.Cut(kv, "=")
		name, secret = strings.TrimSpace(name), strings.TrimSpace(secret)
		if !ok || name == "" || secret == "" {
			return nil, fmt.Errorf("auth token %q: want name=secret", name)
		}
		if _, dup := a.tokens[name]; dup {
			return nil, fmt.Errorf("auth token %q defined twice", name)
		}
		a.tokens[name] = secret
	}
	for _, d := range splitList(defs) {
		parts := strings.Split(d, "|")
		if len(parts) > 3 || strings.TrimSpace(parts[0]) == "" {
			return nil, fmt.Errorf("auth token definition %q: want <path-regex>|<read>|<write>", d)
		}
		re, err := regexp.Compile(strings.TrimSpace(parts[0]))
		if err != nil {
			return nil, fmt.Errorf("auth token definition %q: %w", d, err)
		}
		def := tokenDef{pattern: re}
		if len(parts) > 1 {
			def.read = splitNames(parts[1])
		}
		if len(parts) > 2 {
			def.write = splitNames(parts[2])
		}
		for _, name := range append(append([]string(nil), def.read...), def.write...) {
			if _, ok := a.tokens[name]; !ok {
				return nil, fmt.Errorf("auth token definition %q names token %q, which --auth-tokens does not define", d, name)
			}
		}
		a.defs = append(a.defs, def)
	}
	return a, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, "&") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// errUnauthorized is what a failed check answers, whatever failed: a missing, malformed or
// wrong token must not be told apart by a client.
var errUnauthorized = errors.New("a valid bearer token is required")

// Authorize returns the name of the token that allows r ("" when the path is open), or an error.
func (a *TokenAuth) Authorize(r *http.Request) (string, error) {
	for _, d := range a.defs {
		if !d.pattern.MatchString(r.URL.Path) {
			continue
		}
		names := d.write
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			names = d.read
		}
		if len(names) == 0 {
			return "", nil
		}
		got, ok := bearer(r)
		if !ok {
			return "", errUnauthorized
		}
		// Every candidate is compared, so the time taken does not say which one came close.
		match := ""
		for _, name := range names {
			if subtle.ConstantTimeCompare([]byte(got), []byte(a.tokens[name])) == 1 {
				match = name
			}
		}
		if match == "" {
			return "", errUnauthorized
		}
		return match, nil
	}
	return "", nil
}

// bearer returns the token of an "Authorization: Bearer <token>" header; the scheme is matched
// case-insensitively, as RFC 9110 says.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Wrap returns next behind the token check: 401 with a JSON body when it fails.
func (a *TokenAuth) Wrap(next http.Handler) http.Handler {
	if len(a.defs) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, err := a.Authorize(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="anchord"`)
			WriteError(w, http.StatusUnauthorized, "unauthorized", err.Error())
			return
		}
		next.ServeHTTP(w, r.WithContext(withTokenName(r.Context(), name)))
	})
}

type tokenNameKey struct{}

func withTokenName(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, tokenNameKey{}, name)
}

// TokenName returns the name of the token that authorized the request of ctx ("" if none did).
func TokenName(ctx context.Context) string {
	name, _ := ctx.Value(tokenNameKey{}).(string)
	return name
}
