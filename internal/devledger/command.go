package devledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/anchord/anchord/internal/param"
)

// Command runs `anchord devledger [parameters]` and returns the exit code: a development
// stand-in for a Sawtooth network, for local use and tests — not a ledger.
func Command(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	cfg := Config{Addr: AddrDefault, CommitDelay: CommitDelayDefault, HangTimeout: HangTimeoutDefault}
	var seed int64
	params := []param.Param{
		param.String(&cfg.Addr, "devledger-addr", "listen address of the development ledger's Sawtooth REST API"),
		param.Duration(&cfg.CommitDelay, "devledger-commit-delay", "how long an accepted batch stays PENDING before it is COMMITTED"),
		param.Duration(&cfg.HangTimeout, "devledger-hang-timeout", "how long a timeout fault hangs before answering 503"),
		param.Int64(&seed, "devledger-fault-seed", "seed of the fault choice (a run is reproducible)"),
		param.Float(&cfg.Faults.Unavailable, "devledger-fault-unavailable", "share of submissions answered 503"),
		param.Float(&cfg.Faults.TooManyRequests, "devledger-fault-too-many-requests", "share of submissions answered 429"),
		param.Float(&cfg.Faults.BadRequest, "devledger-fault-bad-request", "share of submissions answered 400"),
		param.Float(&cfg.Faults.Timeout, "devledger-fault-timeout", "share of submissions recorded but never answered in time"),
		param.Float(&cfg.Faults.Lost, "devledger-fault-lost", "share of submissions answered 202 but never recorded"),
		param.Float(&cfg.Faults.Invalid, "devledger-fault-invalid", "share of accepted batches later found INVALID"),
	}
	if err := param.Parse("devledger", args, lookupEnv, params, stdout); err != nil {
		if errors.Is(err, param.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "anchord devledger: %v\n", err)
		return 2
	}
	cfg.Faults.Seed = uint64(seed)
	reg := prometheus.NewRegistry()
	cfg.Registerer, cfg.Gatherer = reg, reg
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "anchord devledger: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Logger.Info("development ledger (a stand-in for a Sawtooth network, not a ledger)", "addr", cfg.Addr, "faults", fmt.Sprintf("%+v", cfg.Faults))
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "anchord devledger: %v\n", err)
		return 1
	}
	return 0
}
