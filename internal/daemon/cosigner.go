package daemon

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/anchord/anchord/internal/cosigner"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/store"
)

// witnessLogs lists the logs of the domains we follow, of our witnesses and of the domains we
// witness for, with their keys: the logs this domain cosigns as a tlog-witness without being
// told.
func (d *logDirectory) witnessLogs(ctx context.Context) ([]cosigner.Log, error) {
	logs, err := d.logsOf(ctx, store.RelationshipFollowing, store.RelationshipWitness, store.RelationshipWitnessing)
	if err != nil {
		return nil, err
	}
	out := make([]cosigner.Log, 0, len(logs))
	for _, l := range logs {
		out = append(out, cosigner.Log{Origin: l.Origin, Key: l.Key})
	}
	return out, nil
}

// tlogWitness makes the domain a C2SP tlog-witness when --tlog-witness is set: it serves
// add-checkpoint and the cosigned checkpoints under /witness/ on the API listener, cosigning
// the logs of --tlog-witness-logs and those of the domains it follows, that witness for it and
// that it witnesses for (listed again every --witness-log-monitoring-interval on every instance, so that a request
// never makes it fetch anything). The cosigned checkpoints live in the store, whose compare-and-swap keeps the
// instances of a cluster from cosigning two checkpoints of one size.
func (c *core) tlogWitness(ctx context.Context, dir *logDirectory) error {
	cfg := c.cfg.Cosigner
	if !cfg.Enabled {
		return nil
	}
	domainKey, err := c.domainKey(ctx)
	if err != nil {
		return err
	}
	name := cfg.Name
	if name == "" {
		u, err := url.Parse(c.cfg.ExternalEndpointURL())
		if err != nil {
			return fmt.Errorf("--external-endpoint: %w", err)
		}
		name = u.Host + cosigner.Prefix
	}
	key, err := cosigner.DeriveKey(name, domainKey, cfg.MLDSA)
	if err != nil {
		return fmt.Errorf("--tlog-witness-name: %w", err)
	}
	var static []string
	if cfg.LogsFile != "" {
		b, err := os.ReadFile(cfg.LogsFile)
		if err != nil {
			return fmt.Errorf("--tlog-witness-logs: %w", err)
		}
		if static, err = cosigner.ParseKnownLogs(b); err != nil {
			return fmt.Errorf("--tlog-witness-logs: %w", err)
		}
	}
	// Refreshed as often as the log consistency monitor looks at the same domains' logs.
	logs, err := cosigner.NewKnownLogs(cosigner.KnownLogsConfig{
		Static: static, List: dir.witnessLogs, RefreshInterval: c.cfg.WitnessLog.MonitoringInterval, Logger: c.log("cosigner"),
	})
	if err != nil {
		return fmt.Errorf("--tlog-witness-logs: %w", err)
	}
	w, err := cosigner.New(cosigner.Config{Key: key, Logs: logs, Checkpoints: c.st, Logger: c.log("cosigner"), Registerer: c.reg})
	if err != nil {
		return err
	}
	// The list is refreshed until the consumers stop; requests still served after that read
	// the last one.
	c.sup.add(StageConsumers, "tlog-witness-logs", logs.Run)
	c.routes = append(c.routes, func(mux httpapi.Router) { w.Register(mux) })
	c.bodyLimits[cosigner.Prefix+"/add-checkpoint"] = cosigner.RequestMaxSize
	c.logger.Info("tlog witness", "name", name, "verifier_keys", key.VerifierKeys(), "configured_logs", len(static),
		"url", c.cfg.ExternalEndpointURL()+cosigner.Prefix)
	return nil
}
