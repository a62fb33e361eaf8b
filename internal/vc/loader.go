package vc

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/piprate/json-gold/ld"
)

// JSON-LD context URLs this package can load.
const (
	ContextCredentialsV1        = "https://www.w3.org/2018/credentials/v1"
	ContextActivityAnchorsV1    = "https://w3id.org/activityanchors/v1"
	ContextSecurityV1           = "https://w3id.org/security/v1"
	ContextSecurityV2           = "https://w3id.org/security/v2"
	ContextEd25519Signature2020 = "https://w3id.org/security/suites/ed25519-2020/v1"
)

// ErrUnknownContext is wrapped by every failure to load a context that is not embedded.
var ErrUnknownContext = errors.New("unknown JSON-LD context")

//go:embed context/*.jsonld
var contextFiles embed.FS

// contextFileNames maps each servable URL to its file under context/ (see context/README.md).
var contextFileNames = map[string]string{
	ContextCredentialsV1:        "credentials-v1.jsonld",
	ContextActivityAnchorsV1:    "activityanchors-v1.jsonld",
	ContextSecurityV1:           "security-v1.jsonld",
	ContextSecurityV2:           "security-v2.jsonld",
	ContextEd25519Signature2020: "ed25519-signature-2020-v1.jsonld",
}

// parsedContexts decodes the embedded files once. It is a cache of data fixed at compile time,
// so it is the one package-level value that is not configuration.
var parsedContexts = sync.OnceValues(func() (map[string]map[string]any, error) {
	out := make(map[string]map[string]any, len(contextFileNames))
	for url, name := range contextFileNames {
		raw, err := contextFiles.ReadFile("context/" + name)
		if err != nil {
			return nil, fmt.Errorf("read embedded context %s: %w", name, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("decode embedded context %s: %w", name, err)
		}
		if _, ok := doc["@context"]; !ok {
			return nil, fmt.Errorf("decode embedded context %s: no @context member", name)
		}
		out[url] = doc
	}
	return out, nil
})

// Loader is a JSON-LD document loader that serves the embedded contexts and nothing else: it
// never touches the network, so processing a document whose contexts are not embedded fails
// with ErrUnknownContext instead of stalling on, or trusting, a remote server. The zero value is
// ready to use and safe for concurrent use.
type Loader struct{}

var _ ld.DocumentLoader = Loader{}

// LoadDocument returns the embedded context registered under exactly u.
func (Loader) LoadDocument(u string) (*ld.RemoteDocument, error) {
	contexts, err := parsedContexts()
	if err != nil {
		return nil, fmt.Errorf("load JSON-LD context %q: %w", u, err)
	}
	doc, ok := contexts[u]
	if !ok {
		return nil, fmt.Errorf("load JSON-LD context %q: %w", u, ErrUnknownContext)
	}
	// json-gold merges an @import target into the map it loaded, so every caller gets its own
	// copy rather than the shared parsed one.
	return &ld.RemoteDocument{DocumentURL: u, Document: deepCopy(doc)}, nil
}

// ContextURLs lists the context URLs Loader serves.
func ContextURLs() []string {
	return slices.Sorted(maps.Keys(contextFileNames))
}

// deepCopy copies a decoded JSON value so the copy shares no map or slice with the original.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}
