//go:build !race

package submitter

// clusterAnchors is the size of the cluster test (see race_test.go).
const clusterAnchors = 5000
