// Command anchord is the Sidetree batch writer and anchoring server. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/anchord/anchord/internal/admin"
	"github.com/anchord/anchord/internal/buildinfo"
	"github.com/anchord/anchord/internal/config"
	"github.com/anchord/anchord/internal/daemon"
	"github.com/anchord/anchord/internal/devledger"
	"github.com/anchord/anchord/internal/loadgen"
	"github.com/anchord/anchord/internal/logger"
	"github.com/anchord/anchord/internal/param"
)

// version and revision may be stamped at build time (-ldflags "-X main.revision=…", as
// scripts/build does); empty, they come from the go command's build record.
var version, revision string

const usage = `anchord — Sidetree batch writer and anchoring server

Usage:
  anchord serve [parameters]      run the server (anchord help serve lists every parameter)
  anchord config [parameters]     print the configuration serve would run with
  anchord loadgen [parameters]    load an anchord with generated operations
  anchord admin dead-letters list|retry|drop    inspect and retry parked items of a running anchord
  anchord admin follow list|add|remove          follow other domains
  anchord admin followers list                  the domains that follow us
  anchord admin acceptlist list|add|remove      whose follows and invitations are accepted
  anchord admin witness list|add|invite|remove  invite domains to witness our anchors
  anchord admin witnessing list                 the domains whose anchors we witness
  anchord admin policy get|set                  show or set the witness policy (Orb's language)
  anchord admin cas pin-missing                 add to the IPFS node the batch files it lacks
  anchord devledger [parameters]  a development Sawtooth REST API (a stand-in, not a ledger)
  anchord version                 print the version and VCS revision (also: anchord --version)
  anchord help [COMMAND]          this help, or a command's (anchord help serve, anchord help admin)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return runWithEnv(args, param.LookupEnv, stdout, stderr)
}

func runWithEnv(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], lookupEnv, stdout, stderr)
	case "config":
		cfg, err := config.Load(args[1:], lookupEnv, stdout)
		if err != nil && !errors.Is(err, param.ErrHelp) {
			fmt.Fprintf(stderr, "anchord config: %v\n", err)
			return 2
		}
		if err == nil {
			cfg.Write(stdout)
		}
		return 0
	case "loadgen":
		return loadgenCmd(args[1:], lookupEnv, stdout, stderr)
	case "admin":
		return admin.Run(args[1:], lookupEnv, stdout, stderr)
	case "devledger":
		return devledger.Command(args[1:], lookupEnv, stdout, stderr)
	case "version", "--version", "-version":
		buildinfo.Read(version, revision).Write(stdout)
		return 0
	case "-h", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return runWithEnv([]string{args[1], "--help"}, lookupEnv, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "anchord: unknown command %q (see anchord help)\n\n%s", args[0], usage)
	return 2
}

func serve(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	cfg, err := config.Load(args, lookupEnv, stdout)
	if errors.Is(err, param.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "anchord serve: %v\n", err)
		return 2
	}
	log := logger.New(cfg.LogFormat, cfg.LogLevel, stderr)
	logger.Capture(log)
	// A process-wide setting, so it is made here and not in daemon.Run, which tests run several
	// times in one process. GOMEMLIMIT, which the runtime already applied, wins over the default.
	if _, set := lookupEnv("GOMEMLIMIT"); !set || cfg.MemoryLimit != 0 {
		if limit := daemon.MemoryLimit(cfg); limit > 0 {
			debug.SetMemoryLimit(limit)
			log.Debug("memory limit", "bytes", limit)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal starts the ordered shutdown, a second one kills at once.
		<-ctx.Done()
		stop()
	}()
	if err := daemon.Run(ctx, cfg, daemon.Options{Logger: log, Build: buildinfo.Read(version, revision)}); err != nil {
		log.Error("anchord failed", "error", err)
		return 1
	}
	return 0
}

func loadgenCmd(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	cfg, err := loadgen.Load(args, lookupEnv, stdout)
	if errors.Is(err, param.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "anchord loadgen: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := loadgen.Run(ctx, cfg, stdout); err != nil {
		fmt.Fprintf(stderr, "anchord loadgen: %v\n", err)
		return 1
	}
	return 0
}
