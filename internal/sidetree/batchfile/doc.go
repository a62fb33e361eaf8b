// Package batchfile builds and reads Sidetree v1 batch files exactly in the reference
// implementation's layout (lib/core/versions/1.0: BatchWriter, CoreIndexFile,
// ProvisionalIndexFile, CoreProofFile, ProvisionalProofFile, ChunkFile, TransactionProcessor,
// AnchoredDataSerializer). It is pure: content addressing comes in as an AddressFunc, content as
// a FetchFunc; nothing here does I/O or keeps state.
//
// # API
//
//   - Build(ops, addr, Limits) (*Files, error) writes the files of a batch of operations parsed
//     by sidetree.ParseOperation, gzip-compressed, with their CAS URIs and the anchor string.
//     Files.List() gives them in the order to store them (core index last). Errors:
//     ErrNoOperations; *DuplicateSuffixError (two operations for one DID: readers discard such a
//     batch); *CapacityError (a compressed file above its cap, or more than MaxOperations
//     operations) with Fit, a verified number of leading operations that does fit.
//   - Read(Profile, anchorString, fetch, Limits) (*Batch, error) applies the reader rules and
//     returns the operations in anchor order as sidetree.AnchoredOperation: Position is the
//     reference implementation's operationIndex (creates, recovers, deactivates, updates);
//     Request is the request rebuilt from the files, byte-identical to the Operation.Request of
//     what was built, so it can be stored per DID, resolved, or queued again. Sequence is left
//     for the caller.
//   - ReadOutline(anchorString, fetch, Limits) (*Outline, error) reads only the two index files:
//     the URIs of the batch's files and each operation's type and DID in anchor order, with
//     Outline.FilesOf(type) naming the files that carry an operation of that type. It checks what
//     it reads as Read does and fails as Read fails; what it does not read, it does not check.
//   - ParseAnchorString(s, Limits) (Anchor, error) and Anchor.String().
//
// # Layout (JSON.stringify member order, empty members omitted)
//
//	chunk             {"deltas":[creates…, recovers…, updates…]}
//	provisional proof {"operations":{"update":[{"signedData":JWS}…]}}                 (updates)
//	core proof        {"operations":{"recover":[…],"deactivate":[…]}}    (recovers/deactivates;
//	                  both arrays always, as the reference implementation writes them)
//	provisional index {"chunks":[{"chunkFileUri":…}],"operations":{"update":[{"didSuffix",
//	                  "revealValue"}…]},"provisionalProofFileUri":…}          (unless only deactivates)
//	core index        {"provisionalIndexFileUri":…,"operations":{"create":[{"suffixData"}…],
//	                  "recover":[…],"deactivate":[…]},"coreProofFileUri":…}
//
// signedData is the compact JWS string as received; deltas and suffixData keep their member
// order. No writerLockId is written: anchord does not use Bitcoin value time locks.
//
// # Reader rules
//
// The anchor string is <count>.<URI> with count ^[1-9]\d*$ and at most MaxOperations. Each file
// is fetched with its kind's cap (core index and provisional index 1,000,000 bytes, each proof
// file 2,500,000, chunk 10,000,000), refused above it, and decompressed to at most
// DecompressionFactor (3) times the cap, aborting as soon as that is exceeded. Each file must
// have only its known members, with the types above, and valid contents (suffix data, operation
// references, JWS and payload per type, deltas within MAX_DELTA_SIZE). Across files: no DID twice
// in the core index file, nor in the provisional index file, nor in both; provisionalIndexFileUri
// required when there are creates or recovers; coreProofFileUri present exactly when there are
// recovers or deactivates, provisionalProofFileUri exactly when there are updates; the core index
// holds at most count operations and the provisional index at most count minus those; the core
// proof file's proof total equals its operations (only the total, as in the reference
// implementation; a deactivate whose proof is missing is rebuilt without signedData and never
// applies); each deactivate proof names the DID at its position; provisional proofs and chunk
// deltas match their counts exactly.
//
// An invalid anchor string, core index file or core proof file invalidates the batch: Read
// returns the *sidetree.Error (codes invalid_anchor_string, file_too_large,
// decompression_failed, invalid_core_index_file, invalid_core_proof_file,
// operation_count_exceeds_limit, …). A problem with the provisional index, provisional proof or
// chunk file does not: as in the reference implementation (kept for data pruning), the core
// operations are returned without deltas, updates are dropped, and Batch.ProvisionalErr says why.
// A FetchFunc error is returned as a *FetchError, from Read for core files and in
// ProvisionalErr for the others; the caller's own error tells whether to retry.
//
// Beyond the reference implementation: every file and "operations" member must be a JSON object;
// URIs may be checked by Limits.CheckURIFunc (e.g. cas.ParseCID); JSON is parsed by jsontree
// (no duplicate members).
//
// # Compression and speed
//
// Files are gzipped with klauspost/compress at its level 2. Its output differs from Node's zlib
// (OS byte, deflate choices), so CAS URIs of equal content differ between implementations;
// compare JSON, not CIDs. Batch files are mostly base64url hashes and keys, which no level
// compresses, plus JSON structure repeated 10,000 times, which every level finds. So the level
// changes the time much more than the size: building a batch of 10,000 creates (one key and one
// service each; BenchmarkBatch) took 50.6 ms with the standard library at level 6 and 24.7 ms
// here, and the core index file, the one nearest its cap, grew by 1 % (691,931 → 698,660 bytes
// of its 1 MB; the chunk file 1,084,002 → 1,093,607). Level 3 took 31.6 ms for +0.5 %, level 1
// 24.1 ms for +1.4 %. Files are read with the standard library's gzip (see decompress).
package batchfile
