package httpapi

import (
	"net/http"

	"github.com/anchord/anchord/internal/buildinfo"
)

// VersionInfo is the body of GET /version: which anchord answers, and the protocol parameters it
// writes and resolves with, so that a client can check it talks to the node it expects (a
// --did-method mismatch shows here first).
type VersionInfo struct {
	Name string `json:"name"`
	buildinfo.Info
	Protocol ProtocolInfo `json:"protocol"`
}

// ProtocolInfo are the Sidetree protocol parameters of the node (the reference
// implementation's protocol-parameters, under their JSON names where it has them).
type ProtocolInfo struct {
	// SidetreeVersion is the version of the Sidetree specification implemented.
	SidetreeVersion     string   `json:"sidetreeVersion"`
	DIDMethod           string   `json:"didMethod"`
	SignatureAlgorithms []string `json:"signatureAlgorithms"`
	HashAlgorithm       string   `json:"hashAlgorithm"`
	// HashAlgorithmInMultihashCode is the multihash code of HashAlgorithm (18: sha2-256).
	HashAlgorithmInMultihashCode int    `json:"hashAlgorithmInMultihashCode"`
	CompressionAlgorithm         string `json:"compressionAlgorithm"`
	MaxOperationCount            int    `json:"maxNumberOfOperationsPerBatch"`
	MaxDeltaSizeInBytes          int    `json:"maxDeltaSizeInBytes"`
	MaxCoreIndexFileSizeInBytes  int    `json:"maxCoreIndexFileSizeInBytes"`
	MaxProvisionalIndexFileSize  int    `json:"maxProvisionalIndexFileSizeInBytes"`
	MaxProofFileSizeInBytes      int    `json:"maxProofFileSizeInBytes"`
	MaxChunkFileSizeInBytes      int    `json:"maxChunkFileSizeInBytes"`
	MaxCASURILength              int    `json:"maxCasUriLength"`
	// CASCIDVersion is the CID version of the batch files this node writes (0: Qm…, 1: b…).
	CASCIDVersion int `json:"casCidVersion"`
	// BatchWriterTimeout is how long an accepted operation waits at most before its batch is
	// cut (Go duration text): roughly how soon a new DID resolves.
	BatchWriterTimeout string `json:"batchWriterTimeout"`
	// AnchorBackend is how anchors become final: local or ledger.
	AnchorBackend string `json:"anchorBackend"`
}

// VersionRoutes returns the registration of GET /version.
func VersionRoutes(v VersionInfo) func(mux Router) {
	v.Name = "anchord"
	return func(mux Router) {
		mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, v)
		})
	}
}
