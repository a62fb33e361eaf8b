package sidetree

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/mr-tron/base58"
)

// Orb's key types and the JSON-LD context each adds to a document (sidetree-go's
// didtransformer, which Orb runs): every other type is refused at intake, as Orb's document
// validator refuses it.
var orbKeyContexts = map[string]string{
	"JsonWebKey2020":                    "https://w3id.org/security/suites/jws-2020/v1",
	"EcdsaSecp256k1VerificationKey2019": "https://w3id.org/security/suites/secp256k1-2019/v1",
	"Ed25519VerificationKey2018":        "https://w3id.org/security/suites/ed25519-2018/v1",
	"Ed25519VerificationKey2020":        "https://w3id.org/security/suites/ed25519-2020/v1",
	"Bls12381G2Key2020":                 "https://w3id.org/security/suites/bls12381-2020/v1",
	"X25519KeyAgreementKey2019":         "https://w3id.org/security/suites/x25519-2019/v1",
}

// renderOrbResult renders a resolution result as Orb's resolver writes it (Go's encoding/json
// over maps, so members in byte order): the document with ids qualified by the DID, the
// contexts of its key types, alsoKnownAs, and Ed25519VerificationKey2018/2020 keys as
// publicKeyBase58/publicKeyMultibase; the metadata with canonicalId, equivalentId, created,
// updated and versionId beside method. deactivated is written when true.
func renderOrbResult(did *DID, st *State, m Metadata) []byte {
	id := did.renderID(st)
	doc := map[string]any{"id": id}
	contexts := []any{didDocumentContext}
	if len(st.Document.AlsoKnownAs) > 0 {
		doc["alsoKnownAs"] = st.Document.AlsoKnownAs
	}
	purposes := map[string][]string{}
	var methods []map[string]any
	for _, k := range st.Document.PublicKeys {
		kid := id + "#" + k.ID
		vm := map[string]any{"id": kid, "type": k.Type, "controller": id}
		switch x := jwkX(k.JWK); {
		case k.Type == "Ed25519VerificationKey2018" && x != nil:
			vm["publicKeyBase58"] = base58.Encode(x)
		case k.Type == "Ed25519VerificationKey2020" && x != nil:
			vm["publicKeyMultibase"] = "z" + base58.Encode(x)
		default:
			vm["publicKeyJwk"] = sortedJSON(k.JWK)
		}
		if c, ok := orbKeyContexts[k.Type]; ok && !slices.Contains(contexts, any(c)) {
			contexts = append(contexts, c)
		}
		methods = append(methods, vm)
		for _, p := range k.Purposes {
			purposes[p] = append(purposes[p], kid)
		}
	}
	if len(methods) > 0 {
		doc["verificationMethod"] = methods
	}
	for p, refs := range purposes {
		doc[p] = refs
	}
	var services []map[string]any
	for _, s := range st.Document.Services {
		services = append(services, map[string]any{"id": id + "#" + s.ID, "type": s.Type, "serviceEndpoint": sortedJSON(s.Endpoint)})
	}
	if len(services) > 0 {
		doc["service"] = services
	}
	doc["@context"] = contexts

	method := map[string]any{"published": st.Published}
	if st.RecoveryCommitment != "" {
		method["recoveryCommitment"] = st.RecoveryCommitment
	}
	if st.UpdateCommitment != "" {
		method["updateCommitment"] = st.UpdateCommitment
	}
	if o := st.Origin(); o != "" {
		method["anchorOrigin"] = o
	}
	if len(m.UnpublishedOps) > 0 {
		method["unpublishedOperations"] = m.UnpublishedOps
	}
	if len(m.PublishedOps) > 0 {
		method["publishedOperations"] = m.PublishedOps
	}
	meta := map[string]any{"method": method}
	if st.Deactivated {
		meta["deactivated"] = true
	}
	canonical, equivalent := did.orbNames(st, m)
	if canonical != "" {
		meta["canonicalId"] = canonical
	}
	if len(equivalent) > 0 {
		meta["equivalentId"] = equivalent
	}
	if !m.Created.IsZero() {
		meta["created"] = FormatTime(m.Created)
	}
	if !m.Updated.IsZero() {
		meta["updated"] = FormatTime(m.Updated)
	}
	if m.VersionID != "" {
		meta["versionId"] = m.VersionID
	}
	if !m.NextUpdate.IsZero() {
		meta["nextUpdate"] = FormatTime(m.NextUpdate)
	}
	if m.NextVersionID != "" {
		meta["nextVersionId"] = m.NextVersionID
	}
	// The member order is the one struct Orb marshals: @context, didDocument,
	// didDocumentMetadata; maps inside sort themselves.
	out, err := json.Marshal(struct {
		Context  string         `json:"@context"`
		Document map[string]any `json:"didDocument"`
		Meta     map[string]any `json:"didDocumentMetadata"`
	}{resolutionContext, doc, meta})
	if err != nil {
		// Every value above is a string, a bool, JSON this package validated or a list of
		// operations (strings, numbers and bytes).
		panic("render did:orb result: " + err.Error())
	}
	return out
}

// jwkX returns the decoded x of an OKP JWK, nil for anything else.
func jwkX(jwk []byte) []byte {
	var k struct {
		Kty string `json:"kty"`
		X   string `json:"x"`
	}
	if json.Unmarshal(jwk, &k) != nil || k.Kty != "OKP" {
		return nil
	}
	x, err := decodeBase64URL(k.X)
	if err != nil {
		return nil
	}
	return x
}

// sortedJSON returns JSON this package validated as a value that marshals with its object
// members sorted, as Orb's maps do; numbers are kept as written.
func sortedJSON(raw []byte) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return json.RawMessage(raw)
	}
	return v
}
