// Package explorer is anchord's explorer page: a read-only view, in a browser, of DIDs and their
// history, anchors and their files, the live pipeline and the federation. It holds the page's
// static files (plain HTML, CSS and JavaScript, embedded in the binary, with no build step) and
// the Recorder that keeps the last minutes of pipeline samples for the page's chart. The JSON the
// page reads is httpapi's (ExplorerRoutes and the Sidetree API); nothing here writes anything.
//
// # Serving
//
// Routes serves /explorer/ on the API listener, behind the same token definitions as every
// other route. A browser cannot add a bearer token to a page it navigates to, so the page's
// files must be open where tokens guard reads: the page then asks for a token and sends it with
// each of its API calls. With read tokens, define the explorer's files as open before the
// definitions that guard the data, for example
//
//	--auth-tokens-def '^/explorer/api/|read|,^/explorer/||,^/sidetree/v1/operations|read|write,.*|read|write'
//
// (the first matching definition decides). The files carry no data; the data stays behind the
// read tokens.
//
// # Views and their URLs
//
//	/explorer/                 search a DID; the latest anchors
//	/explorer/did/{did}        a DID (short or long form): state, document, operation history
//	/explorer/anchors          anchors, newest first, paged (?before=)
//	/explorer/anchor/{seq}     one anchor: record, files, operations (?offset=)
//	/explorer/file/{cid}       one batch file, decompressed and shown as JSON
//	/explorer/pipeline         queue, rates chart, recent batches, dead letters (polled)
//	/explorer/federation       followers, following, witnesses ("not federated" when none)
//
// # Recorder
//
// The Recorder is a loop (Run) that reads the pipeline's counters and gauges from the metrics
// registry every Interval and keeps Window of samples in a ring; rates are computed at record
// time from consecutive samples. The figures are this instance's: in a cluster each instance
// has its own queue and counters.
package explorer
