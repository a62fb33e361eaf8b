// Package sawtoothcheck checks the Sawtooth BatchLists anchord submits with someone else's
// code: Hyperledger's Sawtooth Go SDK, whose protobuf types decode them and whose signing
// package verifies every header signature. Its tests are the whole of it.
//
// It is a module of its own so that the SDK's dependencies (btcd, the old golang/protobuf API,
// and cgo with OpenSSL for the SDK's PEM loader) never enter anchord's go.mod; scripts/test
// runs it. docs/design/ledger.md says what no test here can check without a live validator.
package sawtoothcheck
