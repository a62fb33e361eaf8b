package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/param"
)

// policyPath is the witness policy on the admin listener; the server also answers Orb's /policy.
const policyPath = "/admin/v1/policy"

// runPolicy executes `anchord admin policy get|set [POLICY] [params]`.
func runPolicy(verb string, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	o := options{Target: TargetDefault, DataDir: DataDirDefault}
	// The policy may come before or after the parameters; every parameter here takes a value
	// except --help. A policy never starts with "-".
	var texts, rest []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !strings.HasPrefix(arg, "-") {
			texts = append(texts, arg)
			continue
		}
		rest = append(rest, arg)
		name := strings.TrimLeft(arg, "-")
		if !strings.Contains(name, "=") && name != "help" && name != "h" && i+1 < len(args) {
			rest = append(rest, args[i+1])
			i++
		}
	}
	if err := param.Parse("admin policy "+verb, rest, lookupEnv, o.commonParams(), stdout); err != nil {
		if errors.Is(err, param.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 2
	}
	switch {
	case verb == "get" && len(texts) == 0:
	case verb == "set" && len(texts) == 1:
	case verb == "set":
		// Quoting the policy keeps its single spaces exactly as written: joining words here
		// would hide a doubled space the server refuses.
		fmt.Fprintln(stderr, "anchord admin: policy set needs the policy as one argument, quoted: 'OutOf(1,system) AND OutOf(1,batch)'")
		return 2
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	c, err := o.newClient(30 * time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	var body []byte
	if verb == "get" {
		body, err = c.do(context.Background(), http.MethodGet, policyPath)
	} else {
		body, err = c.exchange(context.Background(), http.MethodPost, policyPath, "text/plain; charset=utf-8", strings.NewReader(texts[0]))
	}
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	// The policy alone on stdout, so that `policy get` can feed another domain's `policy set`;
	// the empty default gets a word on stderr instead of a blank line that reads as nothing.
	if len(body) == 0 {
		fmt.Fprintln(stderr, "the default witness policy: every batch and every system witness")
		return 0
	}
	fmt.Fprintf(stdout, "%s\n", body)
	return 0
}
