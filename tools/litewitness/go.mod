// Builds litewitness (filippo.io/torchwood), the independent C2SP tlog-witness the tests run
// as cosigners of anchord's log (scripts/litewitness). It is a module of its own so that
// torchwood's dependencies never enter anchord's go.mod. torchwood v0.6.1 is the newest that
// builds with Go 1.26; later versions need Go 1.27.
module github.com/anchord/anchord/tools/litewitness

go 1.26.0

tool filippo.io/torchwood/cmd/litewitness

require (
	filippo.io/torchwood v0.6.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/ncruces/go-strftime v0.1.9 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/crypto v0.38.0 // indirect
	golang.org/x/exp v0.0.0-20250408133849-7e4ce0ab07d0 // indirect
	golang.org/x/mod v0.24.0 // indirect
	golang.org/x/net v0.40.0 // indirect
	golang.org/x/sync v0.14.0 // indirect
	golang.org/x/sys v0.33.0 // indirect
	golang.org/x/text v0.25.0 // indirect
	modernc.org/libc v1.65.7 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.11.0 // indirect
	modernc.org/sqlite v1.37.1 // indirect
	zombiezen.com/go/sqlite v1.4.2 // indirect
)
