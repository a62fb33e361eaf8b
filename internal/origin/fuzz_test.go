package origin

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/observer"
	"github.com/anchord/anchord/internal/sidetree"
)

// FuzzOriginAnswers resolves a DID from an origin whose /.well-known/did-orb, WebFinger and
// resolution answers are arbitrary. Whatever it answers, the resolution must not fail or panic,
// and its result must be the local one or a merge the origin's answer agrees with (Orb's rules:
// same document, commitments, anchor origin and canonicalId).
func FuzzOriginAnswers(f *testing.F) {
	b := setup(f, 0)
	// This domain lists operations too, so the origin's are rendered into its metadata.
	b.b.SetOrbOperations(observer.OrbOperations{IncludeUnpublished: true, IncludePublished: true})
	ctx := context.Background()
	honest, _, err := b.a.Resolve(ctx, b.canonical)
	if err != nil {
		f.Fatal(err)
	}
	local, _, err := b.b.Resolve(ctx, b.canonical)
	if err != nil {
		f.Fatal(err)
	}
	const base = "http://a.example"
	endpoint := base + "/sidetree/v1/identifiers"
	wellKnown := []byte(`{"resolutionEndpoint":"` + endpoint + `"}`)
	finger := []byte(`{"links":[{"rel":"self","href":"` + endpoint + `"},{"rel":"alternate","href":"` + base + `/other"}]}`)
	f.Add(wellKnown, finger, honest)
	f.Add(wellKnown, finger, local)
	f.Add(wellKnown, finger, bytes.Replace(honest, []byte(`"updateCommitment":"`), []byte(`"updateCommitment":"x`), 1))
	f.Add(wellKnown, finger, []byte(`{"didDocumentMetadata":{"method":{"anchorOrigin":"`+base+`","unpublishedOperations":[{"type":"update","operation":"e30="}]}}}`))
	f.Add(wellKnown, finger, []byte(`{"didDocumentMetadata":{"method":{"publishedOperations":[{"canonicalReference":"x","equivalentReferences":["hl:x"],"transactionTime":-1}]}}}`))
	f.Add([]byte(`{"resolutionEndpoint":"https://elsewhere.example/r"}`), finger, honest)
	f.Add(wellKnown, []byte(`{"links":[{"rel":"self"}]}`), honest)
	f.Add([]byte(`[`), []byte(`null`), []byte(`{"didDocument":`))

	// The local result names the origin as b.origin.URL; the answers below are served from it.
	origin := b.origin.URL
	f.Fuzz(func(t *testing.T, wellKnown, finger, answer []byte) {
		fix := func(body []byte) []byte { return bytes.ReplaceAll(body, []byte(base), []byte(origin)) }
		fetch := func(_ context.Context, url string, maxBytes int64) ([]byte, error) {
			var body []byte
			switch {
			case strings.HasSuffix(url, "/.well-known/did-orb"):
				body = fix(wellKnown)
			case strings.Contains(url, "/.well-known/webfinger"):
				body = fix(finger)
			default:
				body = answer
			}
			return body[:min(int64(len(body)), maxBytes)], nil
		}
		r, err := New(Config{Self: "http://b.example", Registerer: prometheus.NewRegistry()}, b.b, fetch)
		if err != nil {
			t.Fatal(err)
		}
		body, status, err := r.Resolve(ctx, b.canonical)
		if err != nil || status != sidetree.ResolutionFound {
			t.Fatalf("resolution failed: %v, %v", status, err)
		}
		if bytes.Equal(body, local) {
			return
		}
		theirs, err := parseResult(answer)
		if err != nil {
			t.Fatalf("merged from an answer that does not parse: %s", body)
		}
		mine, err := parseResult(body)
		if err != nil || !json.Valid(body) {
			t.Fatalf("merged result does not parse: %s", body)
		}
		if what := agree(theirs, mine); what != "" {
			t.Fatalf("merged though %s differs: %s", what, body)
		}
	})
}
