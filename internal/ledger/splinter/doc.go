// Package splinter is the Splinter scabbard implementation of ledger.Client: it submits
// serialized BatchLists to POST /scabbard/{circuit}/{service}/batches and reads
// GET /scabbard/{circuit}/{service}/batch_statuses?ids=…. Scabbard parses the same BatchList
// protobuf as Sawtooth (transact's protos match Sawtooth's), so package sawtooth builds the
// bytes for both.
//
// Nomenclature mapping:
//
//	ledger                    scabbard
//	serviceID                 "<circuit id>::<service id>", as Grid stores service_id
//	StatusPending             statusType Pending, and Valid (executed, not yet committed)
//	StatusCommitted           statusType Committed
//	StatusInvalid (+message)  statusType Invalid; message = the error_message of each
//	                          invalid transaction
//	StatusUnknown             statusType Unknown
//
// Scabbard answers 429 with no body when its pending-batch queue is full; that is a Retry
// like any 429, never a parse failure (Grid's client tried to parse a JSON body out of every
// non-2xx answer). Requests carry the SplinterProtocolVersion header (scabbard protocol 1) and
// an optional Authorization header.
package splinter
