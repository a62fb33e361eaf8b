// Package ledger is the contract between anchord's batch submitter and the ledgers it anchors
// to: the Client interface, the classification of a submission answer (Result) and of a batch's
// fate (Status). It does no I/O. The implementations are sawtooth.Client (Sawtooth REST API)
// and splinter.Client (Splinter scabbard); internal/devledger is a development server that
// speaks the Sawtooth REST and scabbard dialects.
//
// What a Client MUST do:
//
//   - Submit sends the serialized BatchList exactly as given, once. It never retries: the
//     submitter owns retries, backoff and attempt counts. It never returns an error; every
//     outcome, including a transport failure, is a Result.
//   - Submit classifies the answer: any 2xx is Accepted; 400 and 404 are Rejected (permanent:
//     the same bytes will be refused again); 408, 429, 5xx, any other status, a timeout, a
//     connection error or a cancelled context is Retry. A Rejected or Retry result keeps the
//     HTTP status and the ledger's error code and message when the body has them; a body that
//     is missing or not JSON never turns a Retry into anything else.
//   - Statuses returns a status for every distinct id it was given (an id the ledger did not
//     mention is Unknown), and an error only when the ledger could not be asked or answered
//     something unreadable. It may split the ids over several requests.
//   - Both methods bound every HTTP request by the client's configured timeout as well as by
//     the caller's context.
//
// Statuses (the Sawtooth names, which Grid's dlt_status column also uses):
//
//	PENDING    the ledger holds the batch but has not committed it (Splinter: Pending, Valid)
//	COMMITTED  final; the batch is in the ledger
//	INVALID    final; a transaction failed validation; resubmitting the same bytes fails again
//	UNKNOWN    the ledger has no record of the batch: never received, lost, or not yet seen
//
// A submitter can keep the serialized bytes and the batch id in a row, resubmit the same bytes
// after a Retry (the id does not change, and a ledger treats a batch it already holds as the
// same batch), and poll Statuses for groups of ids. Result.MaybeProcessed marks the answers
// after which the ledger may hold the batch even though it did not say so; asking Statuses
// before resubmitting avoids a needless resubmission.
package ledger
