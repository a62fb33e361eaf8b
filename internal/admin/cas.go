package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/anchord/anchord/internal/param"
)

// runCAS executes `anchord admin cas <verb>`.
func runCAS(verb string, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	if verb != "pin-missing" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	o := options{Target: TargetDefault, DataDir: DataDirDefault}
	if err := param.Parse("admin cas "+verb, args, lookupEnv, o.commonParams(), stdout); err != nil {
		if errors.Is(err, param.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 2
	}
	c, err := o.newClient(10 * time.Minute)
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	body, err := c.do(context.Background(), http.MethodPost, "/admin/v1/cas/pin-missing")
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	var out struct {
		Queued int `json:"queued"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		fmt.Fprintf(stderr, "anchord admin: decode answer: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "queued %d files the IPFS node lacks\n", out.Queued)
	return 0
}
