// Checks anchord's Sawtooth batch lists with the Hyperledger Sawtooth Go SDK (scripts/test runs
// it). A module of its own so that the SDK's dependencies never enter anchord's go.mod.
module github.com/anchord/anchord/tools/sawtoothcheck

go 1.26.0

require (
	github.com/anchord/anchord v0.0.0
	github.com/hyperledger/sawtooth-sdk-go v0.1.4
	github.com/stretchr/testify v1.12.1
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/btcsuite/btcd v0.21.0-beta // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/decred/dcrd/dcrec/secp256k1/v4 v4.4.1 // indirect
	github.com/fxamacker/cbor/v2 v2.10.0 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/anchord/anchord => ../..
