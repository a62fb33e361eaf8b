// Package admin is the `anchord admin` command: an HTTP client of a running anchord's admin API
// (/admin/v1), so that whatever it changes goes through the server that owns the queue.
//
//	anchord admin dead-letters list  [--kind K] [--after ID] [--limit N]
//	anchord admin dead-letters retry ID...
//	anchord admin dead-letters drop  ID...
//	anchord admin cas pin-missing
//	anchord admin follow add|remove ACTOR-IRI
//	anchord admin follow list [--json]
//	anchord admin followers list [--json]
//	anchord admin witness add|invite|remove ACTOR-IRI
//	anchord admin witness list [--json]
//	anchord admin witnessing list [--json]
//	anchord admin acceptlist add|remove --type follow|invite-witness ACTOR-IRI
//	anchord admin acceptlist list [--type T] [--json]
//	anchord admin policy get
//	anchord admin policy set POLICY
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/anchord/anchord/internal/admintoken"
	"github.com/anchord/anchord/internal/httpapi"
	"github.com/anchord/anchord/internal/param"
)

// Defaults.
const (
	// TargetDefault is the admin listener of an anchord started with the defaults.
	TargetDefault = "http://127.0.0.1:8081"
	// DataDirDefault is serve's --data-dir default, where a server given no --admin-token
	// keeps the one it made.
	DataDirDefault = "./data"
	LimitDefault   = 100
)

type options struct {
	Target  string
	Token   string
	DataDir string
	Kind    string
	After   int64
	Limit   int
	JSON    bool
}

// commonParams are the parameters of every admin command: where, and with which token.
func (o *options) commonParams() []param.Param {
	return []param.Param{
		param.String(&o.Target, "target", "base URL of the admin listener (--admin-addr) of the anchord to administer"),
		param.Secret(&o.Token, "admin-token", "bearer token of the admin API; empty: the one the server keeps in --data-dir"),
		param.String(&o.DataDir, "data-dir", "the server's --data-dir, where it keeps the admin token it made when it was given none"),
	}
}

// newClient returns the client of the admin API at o.Target with the token: --admin-token (or
// ANCHORD_ADMIN_TOKEN), else the one the server keeps in --data-dir. With neither, requests go
// without one and the server's 401 says so.
func (o *options) newClient(timeout time.Duration) (*client, error) {
	c := &client{base: strings.TrimRight(o.Target, "/"), token: o.Token, http: &http.Client{Timeout: timeout}}
	if c.token != "" {
		return c, nil
	}
	token, err := admintoken.Read(o.DataDir)
	switch {
	case err == nil:
		c.token = token
	case errors.Is(err, fs.ErrNotExist):
		c.noToken = "no --admin-token, no ANCHORD_ADMIN_TOKEN and no " + admintoken.Path(o.DataDir)
	default:
		return nil, err
	}
	return c, nil
}

func (o *options) params() []param.Param {
	return append(o.commonParams(), param.String(&o.Kind, "kind", "list only this kind: operation, message, ledger_batch or activity"),
		param.Int64(&o.After, "after", "list dead letters with an id above this"),
		param.Int(&o.Limit, "limit", "list at most this many"),
		param.Bool(&o.JSON, "json", "print JSON instead of a table"),
	)
}

const usage = `Usage:
  anchord admin dead-letters list  [--kind K] [--after ID] [--limit N] [--json]
  anchord admin dead-letters retry ID...
  anchord admin dead-letters drop  ID...
  anchord admin cas pin-missing
  anchord admin follow add|remove ACTOR-IRI      follow another domain (returns once the Follow is queued)
  anchord admin follow list [--json]             the domains we follow: pending, accepted or rejected
  anchord admin followers list [--json]          the domains that follow us
  anchord admin witness add|invite|remove ACTOR-IRI  invite a domain to witness our anchors (Orb: InviteWitness) or withdraw
  anchord admin witness list [--json]            the domains we invited: pending, accepted or rejected
  anchord admin witnessing list [--json]         the domains whose anchors we witness
  anchord admin acceptlist add|remove --type follow|invite-witness ACTOR-IRI
  anchord admin acceptlist list [--type T] [--json]
  anchord admin policy get                       the witness policy ('' is the default: every witness)
  anchord admin policy set 'POLICY'              e.g. 'OutOf(1,system)'; '' sets the default back
Common parameters: --target URL (ANCHORD_TARGET), --admin-token TOKEN (ANCHORD_ADMIN_TOKEN),
--data-dir DIR (ANCHORD_DATA_DIR): without a token, the one the server keeps in DIR/admin-token.
`

// Run executes `anchord admin …` and returns the process exit code.
func Run(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) >= 2 {
		switch args[0] {
		case "cas":
			return runCAS(args[1], args[2:], lookupEnv, stdout, stderr)
		case "follow", "followers", "witness", "witnessing", "acceptlist":
			return runFederation(args[0], args[1], args[2:], lookupEnv, stdout, stderr)
		case "policy":
			return runPolicy(args[1], args[2:], lookupEnv, stdout, stderr)
		}
	}
	if len(args) < 2 || args[0] != "dead-letters" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	verb := args[1]
	o := options{Target: TargetDefault, DataDir: DataDirDefault, Limit: LimitDefault}
	var ids []string
	rest := args[2:]
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		ids, rest = append(ids, rest[0]), rest[1:]
	}
	if err := param.Parse("admin dead-letters "+verb, rest, lookupEnv, o.params(), stdout); err != nil {
		if errors.Is(err, param.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 2
	}
	c, err := o.newClient(30 * time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	ctx := context.Background()
	switch verb {
	case "list":
		err = c.list(ctx, o, stdout)
	case "retry", "drop":
		if len(ids) == 0 {
			fmt.Fprintf(stderr, "anchord admin: %s needs at least one dead letter id\n", verb)
			return 2
		}
		err = c.each(ctx, verb, ids, stdout)
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "anchord admin: %v\n", err)
		return 1
	}
	return 0
}

type client struct {
	base  string
	token string
	// noToken says where no token was found, for the message of a 401.
	noToken string
	http    *http.Client
}

func (c *client) do(ctx context.Context, method, path string) ([]byte, error) {
	return c.send(ctx, method, path, nil)
}

// send is do with a JSON body (none if in is nil).
func (c *client) send(ctx context.Context, method, path string, in any) ([]byte, error) {
	if in == nil {
		return c.exchange(ctx, method, path, "", nil)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return c.exchange(ctx, method, path, "application/json", bytes.NewReader(b))
}

// exchange sends a request with a body of contentType (none if body is nil) and returns the
// body of a 200; any other status is an error carrying the server's JSON error, if it sent one.
func (c *client) exchange(ctx context.Context, method, path, contentType string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized && c.noToken != "" {
		return nil, fmt.Errorf("%s %s: %d unauthorized: the admin API needs its token (%s; run where the server's data directory is, or give --data-dir)",
			method, path, resp.StatusCode, c.noToken)
	}
	if resp.StatusCode != http.StatusOK {
		var eb httpapi.ErrorBody
		if json.Unmarshal(out, &eb) == nil && eb.Code != "" {
			return nil, fmt.Errorf("%s %s: %d %s: %s", method, path, resp.StatusCode, eb.Code, eb.Message)
		}
		return nil, fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return out, nil
}

func (c *client) list(ctx context.Context, o options, out io.Writer) error {
	q := url.Values{}
	if o.Kind != "" {
		q.Set("kind", o.Kind)
	}
	q.Set("after", strconv.FormatInt(o.After, 10))
	q.Set("limit", strconv.Itoa(o.Limit))
	body, err := c.do(ctx, http.MethodGet, "/admin/v1/dead-letters?"+q.Encode())
	if err != nil {
		return err
	}
	if o.JSON {
		_, err = out.Write(body)
		return err
	}
	var page httpapi.DeadLetterPage
	if err := json.Unmarshal(body, &page); err != nil {
		return fmt.Errorf("decode dead letters: %w", err)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tREF\tATTEMPTS\tPARKED\tREASON")
	for _, d := range page.DeadLetters {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Kind, d.Ref, d.Attempts, d.CreatedAt.Format(time.RFC3339), oneLine(d.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != nil {
		fmt.Fprintf(out, "more: --after %d\n", *page.Next)
	}
	return nil
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

func (c *client) each(ctx context.Context, verb string, ids []string, out io.Writer) error {
	var failed []string
	for _, id := range ids {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil || n <= 0 {
			failed = append(failed, fmt.Sprintf("%s: not a dead letter id", id))
			continue
		}
		path := fmt.Sprintf("/admin/v1/dead-letters/%d", n)
		method := http.MethodDelete
		if verb == "retry" {
			path, method = path+"/retry", http.MethodPost
		}
		if _, err := c.do(ctx, method, path); err != nil {
			failed = append(failed, err.Error())
			continue
		}
		fmt.Fprintf(out, "%s %d\n", map[string]string{"retry": "retried", "drop": "dropped"}[verb], n)
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}
