package wallet

import (
	"encoding/json"
	"fmt"
)

// Patch is one DID state patch in JSON.
type Patch []byte

// Document is the content of a replace patch.
type Document struct {
	PublicKeys []PublicKey `json:"publicKeys,omitempty"`
	Services   []Service   `json:"services,omitempty"`
}

// PublicKey is a DID document key entry.
type PublicKey struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	PublicKeyJWK json.RawMessage `json:"publicKeyJwk"`
	Purposes     []string        `json:"purposes,omitempty"`
}

// Service is a DID document service entry. Endpoint is a URI string or an object; it must
// marshal with encoding/json, else the patch constructors panic (a programming error, as with
// regexp.MustCompile).
type Service struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Endpoint any    `json:"serviceEndpoint"`
}

// DocumentKey returns a document key entry for k (type JsonWebKey2020).
func DocumentKey(id string, k *Key, purposes ...string) PublicKey {
	return PublicKey{ID: id, Type: "JsonWebKey2020", PublicKeyJWK: k.PublicJWK(), Purposes: purposes}
}

// Replace returns a replace patch.
func Replace(doc Document) Patch {
	return marshal(struct {
		Action   string   `json:"action"`
		Document Document `json:"document"`
	}{"replace", doc})
}

// AddPublicKeys returns an add-public-keys patch.
func AddPublicKeys(keys ...PublicKey) Patch {
	return marshal(struct {
		Action     string      `json:"action"`
		PublicKeys []PublicKey `json:"publicKeys"`
	}{"add-public-keys", nonNil(keys)})
}

// RemovePublicKeys returns a remove-public-keys patch.
func RemovePublicKeys(ids ...string) Patch {
	return marshal(struct {
		Action string   `json:"action"`
		IDs    []string `json:"ids"`
	}{"remove-public-keys", nonNil(ids)})
}

// AddServices returns an add-services patch.
func AddServices(services ...Service) Patch {
	return marshal(struct {
		Action   string    `json:"action"`
		Services []Service `json:"services"`
	}{"add-services", nonNil(services)})
}

// RemoveServices returns a remove-services patch.
func RemoveServices(ids ...string) Patch {
	return marshal(struct {
		Action string   `json:"action"`
		IDs    []string `json:"ids"`
	}{"remove-services", nonNil(ids)})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func marshal(v any) Patch {
	b, err := json.Marshal(v)
	if err != nil {
		// Only an unmarshalable service endpoint can fail; that is a programming error.
		panic(fmt.Sprintf("wallet: marshal patch: %v", err))
	}
	return b
}
