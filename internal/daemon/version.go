package daemon

import (
	"github.com/anchord/anchord/internal/buildinfo"
	"github.com/anchord/anchord/internal/httpapi"
)

// versionInfo is what GET /version reports: the build, and the protocol parameters this node
// writes and resolves with.
func (c *core) versionInfo(build buildinfo.Info) httpapi.VersionInfo {
	algs := make([]string, len(c.profile.Algorithms))
	for i, a := range c.profile.Algorithms {
		algs[i] = string(a)
	}
	return httpapi.VersionInfo{Info: build, Protocol: httpapi.ProtocolInfo{
		SidetreeVersion: "1.0", DIDMethod: c.profile.Method, SignatureAlgorithms: algs,
		HashAlgorithm: "sha2-256", HashAlgorithmInMultihashCode: 18, CompressionAlgorithm: "gzip",
		MaxOperationCount: c.cfg.MaxOperationCount, MaxDeltaSizeInBytes: c.profile.MaxDeltaSize,
		MaxCoreIndexFileSizeInBytes: c.limits.MaxCoreIndexFileSize, MaxProvisionalIndexFileSize: c.limits.MaxProvisionalIndexFileSize,
		MaxProofFileSizeInBytes: c.limits.MaxProofFileSize, MaxChunkFileSizeInBytes: c.limits.MaxChunkFileSize,
		MaxCASURILength: c.limits.MaxCASURILength, CASCIDVersion: c.cfg.CASCIDVersion,
		BatchWriterTimeout: c.cfg.BatchWriterTimeout.String(), AnchorBackend: c.cfg.AnchorBackend,
	}}
}
