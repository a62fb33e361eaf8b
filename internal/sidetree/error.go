package sidetree

import (
	"errors"
	"fmt"
)

// Code is the stable, machine-readable reason of a rejection. The HTTP layer renders it as the
// "code" member of a 400 body; clients and tests match on it, so a code is never renamed.
//
// Where the Sidetree reference implementation rejects the same thing with a code of its own,
// the code is that one, so that a client written against the reference implementation (ION's
// tooling) recognises it. Where the reference implementation is finer-grained (a code per
// property) or has no equivalent, the code is ours; the table in the OpenAPI document lists
// every code with the reference implementation's codes it stands for.
type Code string

// Codes of stateless validation (ParseOperation, ParseDID, batch files).
const (
	CodeInvalidJSON          Code = "invalid_json"                                           // not JSON, not UTF-8, duplicate member name, nested too deep
	CodeInvalidRequest       Code = "invalid_request"                                        // the request is not a JSON object
	CodeUnknownOperationType Code = "operation_type_unknown_or_missing"                      // "type" missing or not one of the four
	CodeMissingProperty      Code = "missing_property"                                       // a required member is absent
	CodeUnknownProperty      Code = "unknown_property"                                       // a member outside the whitelist
	CodeInvalidProperty      Code = "invalid_property"                                       // wrong JSON type or malformed value
	CodeInvalidMultihash     Code = "invalid_multihash"                                      // not base64url, not sha2-256 multihash
	CodeDeltaTooLarge        Code = "delta_exceeds_maximum_size"                             // canonical delta above MaxDeltaSize
	CodeInvalidPatch         Code = "invalid_patch"                                          // malformed patch object
	CodeUnknownPatchAction   Code = "document_composer_patch_missing_or_unknown_action"      // action not supported by the profile
	CodeInvalidPublicKey     Code = "invalid_public_key"                                     // a DID document public key entry
	CodeInvalidService       Code = "invalid_service"                                        // a DID document service entry
	CodeInvalidJWS           Code = "jws_compact_jws_invalid"                                // compact JWS structure or encoding
	CodeInvalidJWSHeader     Code = "jws_protected_header_missing_or_unknown_property"       // header is not exactly {"alg":...}
	CodeUnsupportedAlgorithm Code = "jws_protected_header_missing_or_incorrect_alg"          // alg not enabled in the profile
	CodeInvalidSignedData    Code = "invalid_signed_data"                                    // JWS payload members
	CodeInvalidKey           Code = "invalid_key"                                            // update/recovery key JWK
	CodeKeyAlgorithmMismatch Code = "key_algorithm_mismatch"                                 // header alg does not fit the key type
	CodeInvalidSignature     Code = "jws_failed_signature_validation"                        // signature does not verify
	CodeRevealValueMismatch  Code = "reveal_value_mismatch"                                  // revealValue != hash of the revealed key
	CodeDeltaHashMismatch    Code = "delta_hash_mismatch"                                    // deltaHash != hash of the delta
	CodeDIDSuffixMismatch    Code = "deactivate_operation_signed_did_unique_suffix_mismatch" // deactivate payload names another DID
	CodeCommitmentReuse      Code = "commitment_reuse"                                       // a key commits to itself or to a used value
	CodeInvalidDID           Code = "invalid_did"                                            // not a DID of the configured method
	CodeInvalidLongFormDID   Code = "invalid_long_form_did"                                  // long-form initial state rejected
	CodeOperationTooLarge    Code = "operation_exceeds_maximum_size"                         // request above Profile.MaxOperationSize (did:orb)
	CodeMissingAnchorOrigin  Code = "anchor_origin_missing"                                  // did:orb create or recover without anchorOrigin
	CodeOperationEarly       Code = "operation_early"                                        // did:orb anchorFrom is in the future
	CodeOperationExpired     Code = "operation_expired"                                      // did:orb anchorUntil has passed
)

// Codes of checks against a DID's current state ((*State).Check and CheckLimits).
const (
	CodeDIDNotFound        Code = "did_not_found"
	CodeDIDDeactivated     Code = "did_deactivated"
	CodeDIDAlreadyExists   Code = "did_already_exists"
	CodeCommitmentMismatch Code = "commitment_mismatch" // revealed key is not the one currently committed to
	CodeNoUpdateCommitment Code = "no_update_commitment"
	CodeTooManyOperations  Code = "too_many_operations" // the DID has Profile.MaxOperationsPerDID operations
	CodeDocumentTooLarge   Code = "document_too_large"  // the document would exceed Profile.MaxDocumentBytes
)

// Codes of batch files and anchor strings (package batchfile uses them with this type).
const (
	CodeInvalidAnchorString        Code = "invalid_anchor_string"
	CodeFileTooLarge               Code = "cas_file_too_large"
	CodeDecompressionFailed        Code = "decompression_failed"
	CodeInvalidCoreIndexFile       Code = "invalid_core_index_file"
	CodeInvalidCoreProofFile       Code = "invalid_core_proof_file"
	CodeInvalidProvisionalIndex    Code = "invalid_provisional_index_file"
	CodeInvalidProvisionalProof    Code = "invalid_provisional_proof_file"
	CodeInvalidChunkFile           Code = "invalid_chunk_file"
	CodeInvalidCASURI              Code = "cas_file_uri_not_valid"
	CodeOperationCountExceedsLimit Code = "operation_count_exceeds_limit"
)

// Error is a rejection with a stable code. Its JSON form is the {"code","message"} body of an
// HTTP 400.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	cause   error
}

// Errorf builds an *Error; exported so that package batchfile reports in the same type.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds an *Error whose message is the formatted context followed by cause's message, and
// which unwraps to cause.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	msg := cause.Error()
	if format != "" {
		msg = fmt.Sprintf(format, args...) + ": " + msg
	}
	return &Error{Code: code, Message: msg, cause: cause}
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the error this one wraps, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is makes errors.Is(err, &Error{Code: c}) match any *Error with code c, whatever its message.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}

// CodeOf returns the code of the first *Error in err's chain, or "" if there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
