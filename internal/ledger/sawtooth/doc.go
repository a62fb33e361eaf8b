// Package sawtooth speaks Hyperledger Sawtooth: it builds and signs the BatchList that anchors
// one anchord anchor string (Builder, Signer), checks a BatchList the way a validator does
// before scheduling it (ParseBatchList, VerifyBatch), and submits BatchLists to the Sawtooth
// REST API and reads batch statuses (Client, the Sawtooth implementation of ledger.Client).
//
// # The anchord transaction family
//
// A built BatchList holds one batch of one transaction:
//
//	family_name     "anchord"                 (FamilyName)
//	family_version  "1.0"                     (FamilyVersion)
//	payload         the anchor string, UTF-8, byte for byte (e.g. "42.QmXyz…")
//	payload_sha512  lower-case hex SHA-512 of the payload
//	inputs=outputs  [AnchorAddress]: Namespace("anchord") (first 6 hex of SHA-512("anchord"))
//	                followed by the first 64 hex of SHA-512(anchor): 70 hex characters
//	nonce           32 random hex characters (or a given one)
//	dependencies    none
//	keys            signer_public_key = batcher_public_key = the batch signer, compressed hex
//
// Both headers are signed with secp256k1 ECDSA over SHA-256 of the serialized header bytes; the
// signature is the 64-byte compact r‖s in lower-case hex, and it is the id (the transaction id,
// and the batch id that /batch_statuses reports on).
//
// # Sawtooth REST API facts the Client relies on
//
//   - POST /batches takes Content-Type application/octet-stream and answers 202 when the
//     validator took the batches. 400 is a bad BatchList (API codes 30 invalid or badly signed,
//     34 empty, 35 undecodable, 42 wrong content type); 429 (code 31) is a full validator
//     queue; 408 (code 19) and 503 (codes 15, 17, 18) mean the REST API could not talk to the
//     validator; with code 17 the request may or may not have been processed.
//   - Errors have the body {"error":{"code":<int>,"title":"…","message":"…"}}.
//   - GET /batch_statuses?id=a,b answers {"data":[{"id","status","invalid_transactions":
//     [{"id","message"}]}],"link":…}; POST /batch_statuses with a JSON array of ids (Content-Type
//     application/json) answers the same without link and is the documented choice past 15
//     ids. Ids must be 128 lower-case hex characters or the whole request is refused (400,
//     code 60).
package sawtooth
