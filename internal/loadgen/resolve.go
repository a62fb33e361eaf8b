package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"time"
)

// readDIDs reads the suffixes of a --resolve-dids file: the creates of an --accepted-out file
// ("create <suffix> -"), or one suffix per line. A create listed twice (accepted again after a
// retry) is kept twice; that only weighs it double.
func readDIDs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--resolve-dids: %w", err)
	}
	defer f.Close()
	return parseDIDs(f)
}

func parseDIDs(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 0:
		case len(fields) == 1:
			out = append(out, fields[0])
		case len(fields) == 3 && fields[0] == "create":
			out = append(out, fields[1])
		case len(fields) == 3:
			// An update, recover or deactivate of a DID listed by its create.
		default:
			return nil, fmt.Errorf("--resolve-dids: line %d is neither a suffix nor \"<type> <suffix> <reveal>\"", n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--resolve-dids: %w", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--resolve-dids: no DID in the file")
	}
	return out, nil
}

// pickDID returns a random known DID suffix: from --resolve-dids, else from the published DIDs
// with nothing pending (left in the pool: a resolution changes nothing). Empty when none is known.
func (r *runner) pickDID() string {
	if len(r.dids) > 0 {
		return r.dids[rand.IntN(len(r.dids))]
	}
	r.poolMu.Lock()
	defer r.poolMu.Unlock()
	if len(r.pool) == 0 {
		return ""
	}
	return r.pool[rand.IntN(len(r.pool))].Suffix
}

// get resolves one DID and records its latency and status. The body is read and dropped, not
// decoded: the generator shares the machine, and the figure is the server's.
func (r *runner) get(ctx context.Context, suffix string) {
	start := time.Now()
	status, _, err := r.wire.do(ctx, r.target(), http.MethodGet, "/sidetree/v1/identifiers/did:"+r.cfg.Method+":"+suffix, "", nil, false)
	switch {
	case err == nil:
		r.stats.got(time.Since(start), status)
	case ctx.Err() == nil:
		r.stats.unanswered(true, err)
	}
}
