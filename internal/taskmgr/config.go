package taskmgr

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CheckIntervalDefault is task-manager-check-interval: how often the manager renews its
// permits, tries to acquire the others and starts the tasks that are due. Orb uses 10 s; a
// shorter check lets a dead holder's tasks (the op-queue monitor among them) move sooner.
const CheckIntervalDefault = 5 * time.Second

// Config configures a Manager. There is deliberately no clock to inject: whether a task is due
// and whether a permit is stale are decided by the database clock inside the statements, and
// the trust window is measured on this process's monotonic clock.
type Config struct {
	// InstanceID identifies this instance as a permit holder. It MUST be unique among live
	// instances sharing the database: a holder that finds its own id on a permit under a term
	// it does not know takes it as a restart of itself.
	InstanceID string
	// CheckInterval is task-manager-check-interval; zero means CheckIntervalDefault. Every
	// instance of a cluster MUST use the same value: a permit is stale, and may be taken over,
	// when it was not written for CheckInterval + the task's interval.
	CheckInterval time.Duration

	Logger *slog.Logger
	// Registerer receives the metrics; nil means a private registry.
	Registerer prometheus.Registerer
}

func (c Config) withDefaults() Config {
	if c.CheckInterval == 0 {
		c.CheckInterval = CheckIntervalDefault
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	return c
}

func (c Config) validate() error {
	if c.InstanceID == "" {
		return errors.New("taskmgr: instance id is empty")
	}
	if c.CheckInterval < 0 {
		return errors.New("taskmgr: check interval is negative")
	}
	return nil
}
