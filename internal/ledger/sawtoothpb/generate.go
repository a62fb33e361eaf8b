// Package sawtoothpb holds the Go code generated from batch.proto and transaction.proto: the
// Sawtooth TransactionHeader, Transaction, BatchHeader, Batch and BatchList messages. Only
// generated code lives here; building and checking batches is the job of package sawtooth.
//
// Regenerate with `go generate ./internal/ledger/sawtoothpb` (needs protoc and protoc-gen-go
// on PATH: apt-get install protobuf-compiler; go install
// google.golang.org/protobuf/cmd/protoc-gen-go).
package sawtoothpb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative transaction.proto batch.proto
