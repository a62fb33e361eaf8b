package vc

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// WebResolverConfig configures NewWebResolver.
type WebResolverConfig struct {
	// Client fetches DID documents: the outbound guard's client (egress.Guard.Client), which
	// checks the address, follows no redirects and bounds the time and the size. Required.
	Client *http.Client
	// Scheme is "https" (the default, what the did:web method requires) or "http", for
	// domains that serve plain HTTP on loopback in tests and development.
	Scheme string
}

// NewWebResolver returns a ResolveKeyFunc that fetches the did:web document named by each
// verification method and returns the Ed25519 key it lists under assertionMethod. It does not
// cache: callers that verify often wrap it.
func NewWebResolver(cfg WebResolverConfig) (ResolveKeyFunc, error) {
	scheme := cmp.Or(cfg.Scheme, "https")
	if scheme != "https" && scheme != "http" {
		return nil, fmt.Errorf("new web resolver: scheme %q is not http or https", scheme)
	}
	client := cfg.Client
	if client == nil {
		return nil, errors.New("new web resolver: no HTTP client: DID documents are fetched through the outbound guard")
	}
	return func(ctx context.Context, vm string) (ed25519.PublicKey, error) {
		did, _, _ := strings.Cut(vm, "#")
		host, path, err := ParseDIDWeb(did)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", vm, err)
		}
		doc, err := fetchDIDDocument(ctx, client, scheme+"://"+host+path)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", vm, err)
		}
		if doc.ID != did {
			return nil, fmt.Errorf("resolve %s: %w: document id is %q", vm, ErrInvalidDID, doc.ID)
		}
		return doc.AssertionKey(vm)
	}, nil
}

func fetchDIDDocument(ctx context.Context, client *http.Client, url string) (*DIDDocument, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch DID document: %w", err)
	}
	req.Header.Set("Accept", "application/did+json, application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch DID document: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch DID document %s: status %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentSize+1))
	if err != nil {
		return nil, fmt.Errorf("fetch DID document %s: %w", url, err)
	}
	doc, err := ParseDIDDocument(body)
	if err != nil {
		return nil, fmt.Errorf("fetch DID document %s: %w", url, err)
	}
	return doc, nil
}
