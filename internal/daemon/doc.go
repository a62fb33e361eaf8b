// Package daemon wires anchord together and runs it. It opens the store (SQLite or PostgreSQL)
// and, for a cluster, the broker; builds the mode-neutral core (CAS, task manager with the
// expiry task, HTTP server); and then one assembly per deployment shape (embedded.go,
// cluster.go, submitter.go), each registering its own supervisor stages. The anchoring backend
// is a choice inside a shape (ledger.go). A new shape or component is one more assembly.
//
// All long-lived loops run under one supervisor (supervisor.go), which stops them stage by
// stage. It is the only package, with config for their default constants, that imports storage
// and broker backends; imports_test.go checks the house's import rules.
package daemon
