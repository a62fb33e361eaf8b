package daemon

import (
	"context"

	"github.com/anchord/anchord/internal/explorer"
	"github.com/anchord/anchord/internal/httpapi"
)

// explorer serves the explorer page and its JSON API on the API listener, behind the API tokens
// like every route; every route is a GET, so read tokens guard it. The recorder keeps the
// pipeline's last minutes for the page's chart.
func (c *core) explorer() error {
	rec, err := explorer.NewRecorder(explorer.RecorderConfig{Logger: c.log("explorer")}, c.reg)
	if err != nil {
		return err
	}
	page, err := explorer.Routes()
	if err != nil {
		return err
	}
	c.routes = append(c.routes, page, httpapi.ExplorerRoutes(httpapi.ExplorerConfig{
		Profile: c.profile, Store: c.st, CAS: c.cas, Limits: c.limits, Requests: c.batches, Pipeline: rec,
		Federation: lateFederation{c}, Logger: c.log("explorer"),
	}))
	// The recorder only reads the metrics registry, so it depends on nothing that stops; it
	// stops with the server that serves its samples.
	c.sup.add(StageHTTP, "explorer-recorder", rec.Run)
	return nil
}

// lateFederation reads core.federationView when a request comes, so the federation's assembly
// may set it after the explorer's.
type lateFederation struct{ c *core }

func (l lateFederation) Federation(ctx context.Context) (httpapi.FederationView, error) {
	if l.c.federationView == nil {
		return httpapi.FederationView{}, nil
	}
	return l.c.federationView.Federation(ctx)
}
