package batchfile

import "cmp"

// Protocol defaults (reference implementation protocol-parameters.json, ION).
const (
	MaxOperationsDefault               = 10_000
	MaxCoreIndexFileSizeDefault        = 1_000_000
	MaxProvisionalIndexFileSizeDefault = 1_000_000
	MaxProofFileSizeDefault            = 2_500_000
	MaxChunkFileSizeDefault            = 10_000_000
	MaxCASURILengthDefault             = 100
	DecompressionFactorDefault         = 3
)

// Limits are the size and count parameters of batch files. The zero value of a field means its
// default; DefaultLimits spells them out. File sizes are of the gzip-compressed file.
type Limits struct {
	MaxOperations               int // MAX_OPERATION_COUNT: operations per batch
	MaxCoreIndexFileSize        int // MAX_CORE_INDEX_FILE_SIZE
	MaxProvisionalIndexFileSize int // MAX_PROVISIONAL_INDEX_FILE_SIZE
	MaxProofFileSize            int // MAX_PROOF_FILE_SIZE, for both proof files
	MaxChunkFileSize            int // MAX_CHUNK_FILE_SIZE
	MaxCASURILength             int // MAX_CAS_URI_LENGTH
	// DecompressionFactor bounds a decompressed file at this many times its file kind's maximum
	// size (MAX_MEMORY_DECOMPRESSION_FACTOR, applied as the reference implementation does).
	DecompressionFactor int
	// CheckURIFunc, if set, validates every CAS URI a reader meets (anchor string and file
	// references) beyond the length limit, e.g. cas.ParseCID. A URI it rejects makes the file
	// that names it invalid.
	CheckURIFunc func(uri string) error
	// ReferenceFunc, if set, is what Build writes where a file names another: it receives the
	// named file's CAS URI and content (did:orb writes a hashlink that carries a link to the
	// file, which an Orb domain can fetch; see sidetree.Profile.OrbBatchFiles). Unset, a
	// reference is the CAS URI itself, the reference implementation's layout. Readers ignore it.
	ReferenceFunc func(uri string, data []byte) string
	// OrbProofs makes Build write proof files in Orb's layout: each proof the signedData JWS
	// alone, an empty array left out (sidetree.Profile.OrbBatchFiles, whose readers take only
	// that form).
	OrbProofs bool
}

// DefaultLimits returns the protocol defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxOperations:               MaxOperationsDefault,
		MaxCoreIndexFileSize:        MaxCoreIndexFileSizeDefault,
		MaxProvisionalIndexFileSize: MaxProvisionalIndexFileSizeDefault,
		MaxProofFileSize:            MaxProofFileSizeDefault,
		MaxChunkFileSize:            MaxChunkFileSizeDefault,
		MaxCASURILength:             MaxCASURILengthDefault,
		DecompressionFactor:         DecompressionFactorDefault,
	}
}

// withDefaults fills zero fields.
func (l Limits) withDefaults() Limits {
	l.MaxOperations = cmp.Or(l.MaxOperations, MaxOperationsDefault)
	l.MaxCoreIndexFileSize = cmp.Or(l.MaxCoreIndexFileSize, MaxCoreIndexFileSizeDefault)
	l.MaxProvisionalIndexFileSize = cmp.Or(l.MaxProvisionalIndexFileSize, MaxProvisionalIndexFileSizeDefault)
	l.MaxProofFileSize = cmp.Or(l.MaxProofFileSize, MaxProofFileSizeDefault)
	l.MaxChunkFileSize = cmp.Or(l.MaxChunkFileSize, MaxChunkFileSizeDefault)
	l.MaxCASURILength = cmp.Or(l.MaxCASURILength, MaxCASURILengthDefault)
	l.DecompressionFactor = cmp.Or(l.DecompressionFactor, DecompressionFactorDefault)
	return l
}

// maxSize returns the compressed-size cap of a file kind.
func (l Limits) maxSize(k Kind) int {
	switch k {
	case CoreIndex:
		return l.MaxCoreIndexFileSize
	case ProvisionalIndex:
		return l.MaxProvisionalIndexFileSize
	case CoreProof, ProvisionalProof:
		return l.MaxProofFileSize
	default:
		return l.MaxChunkFileSize
	}
}
