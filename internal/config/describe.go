package config

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/anchord/anchord/internal/secret"
)

// Write prints the effective configuration as `anchord serve` flags, one per line, grouped as
// the start-up log groups them and secrets redacted: what a server given the same flags and
// environment runs with. `anchord config` prints it, so that an operator can read the outcome of
// flags, ANCHORD_* variables and defaults before starting anything.
func (c Config) Write(w io.Writer) {
	params := c.params()
	sort.SliceStable(params, func(i, j int) bool { return params[i].Name() < params[j].Name() })
	for gi, g := range logGroups {
		fmt.Fprintf(w, "# %s\n", g.name)
		for _, p := range params {
			if groupOf(p.Name()) != gi {
				continue
			}
			v := p.Value()
			if p.IsSecret() {
				v = secret.RedactURL(v)
			}
			fmt.Fprintf(w, "--%s=%s\n", p.Name(), strconv.Quote(v))
		}
	}
}
