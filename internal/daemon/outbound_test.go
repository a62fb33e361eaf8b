package daemon

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// outboundExempt are the packages that may build their own HTTP clients, transports and
// dialers, and why. Every other package reaches the network through the outbound guard
// (internal/egress): a request to another domain is made from an address a peer chose, and only
// the guard checks where it goes.
var outboundExempt = map[string]string{
	"internal/egress":          "the outbound guard itself",
	"internal/admin":           "the admin CLI, towards the operator's own admin listener (--target)",
	"internal/loadgen":         "the load generator, towards the operator's node (--target)",
	"internal/cosigner":        "the operator's C2SP witnesses, named with their keys in --witness-log-witnesses and --witness-log-monitor-policy",
	"internal/ipfs":            "the operator's IPFS node (--ipfs-url)",
	"internal/ledger/sawtooth": "the operator's ledger (--ledger-url); Splinter's client uses it",
	"internal/servicetest":     "test support: starts and probes local services",
	"internal/anchordtest":     "test support: probes the processes a test starts",
}

// outboundUse is one construction of an HTTP client, transport or dialer, or one use of
// net/http's default client, found in a package's non-test files.
type outboundUse struct {
	pkg, pos, what string
}

// outboundUses parses the non-test Go files of every package of the module and returns each
// place that builds its own way out: an http.Client or http.Transport literal (or new), a
// net.Dialer, net.Dial*, http.DefaultClient, http.DefaultTransport, or http.Get/Head/Post/
// PostForm.
func outboundUses(t *testing.T) []outboundUse {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}}", module+"...").Output()
	require.NoError(t, err, "go list")
	var uses []outboundUse
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		require.Len(t, fields, 3)
		pkg := strings.TrimPrefix(fields[0], module)
		for _, name := range strings.Fields(fields[2]) {
			uses = append(uses, fileOutboundUses(t, pkg, filepath.Join(fields[1], name))...)
		}
	}
	require.NoError(t, sc.Err())
	return uses
}

func fileOutboundUses(t *testing.T, pkg, path string) []outboundUse {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	require.NoError(t, err)
	names := map[string]string{} // local name → "net/http" or "net"
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p != "net/http" && p != "net" {
			continue
		}
		local := filepath.Base(p)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		names[local] = p
	}
	if len(names) == 0 {
		return nil
	}
	// sel names a package-qualified identifier such as http.Client, or "".
	sel := func(e ast.Expr) string {
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return ""
		}
		x, ok := s.X.(*ast.Ident)
		if !ok || names[x.Name] == "" {
			return ""
		}
		return names[x.Name] + "." + s.Sel.Name
	}
	built := []string{"net/http.Client", "net/http.Transport", "net.Dialer"}
	used := []string{"net/http.DefaultClient", "net/http.DefaultTransport", "net/http.Get", "net/http.Head", "net/http.Post",
		"net/http.PostForm", "net.Dial", "net.DialTimeout", "net.DialTCP", "net.DialUDP", "net.DialIP", "net.DialUnix"}
	var uses []outboundUse
	add := func(n ast.Node, what string) {
		uses = append(uses, outboundUse{pkg: pkg, pos: fset.Position(n.Pos()).String(), what: what})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if w := sel(n.Type); slices.Contains(built, w) {
				add(n, w+"{…}")
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 {
				if w := sel(n.Args[0]); slices.Contains(built, w) {
					add(n, "new("+w+")")
				}
			}
		case *ast.SelectorExpr:
			if w := sel(n); slices.Contains(used, w) {
				add(n, w)
			}
		}
		return true
	})
	return uses
}

// TestOnlyTheGuardBuildsAWayOut keeps HTTP clients, transports and dialers out of every package
// but the guard and the clients of operator-configured endpoints (outboundExempt): federation
// rooms (peer, federation, relay, vc, witnesslog, witness, logmonitor, …) take the guard's
// client. Each exemption must still be needed, so the list stays true.
func TestOnlyTheGuardBuildsAWayOut(t *testing.T) {
	t.Parallel()
	uses := outboundUses(t)
	var bad []string
	needed := map[string]bool{}
	for _, u := range uses {
		if _, ok := outboundExempt[u.pkg]; ok {
			needed[u.pkg] = true
			continue
		}
		bad = append(bad, u.pos+": "+u.what+" in "+u.pkg+": requests to other domains go through internal/egress (Guard.Client)")
	}
	require.Empty(t, bad)
	for pkg := range outboundExempt {
		require.True(t, needed[pkg], "%s is exempt but builds no client: drop the exemption", pkg)
	}
}

// TestOutboundRuleCatchesEachForm runs the scanner over a file with every form it looks for.
func TestOutboundRuleCatchesEachForm(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.go")
	src := `package x

import (
	h "net/http"
	"net"
)

type holder struct{ c *h.Client } // a field of the type is fine

func f() {
	_ = &h.Client{}
	_ = h.Transport{}
	_ = new(h.Client)
	_ = &net.Dialer{}
	_ = h.DefaultClient
	_, _ = h.Get("http://x")
	_, _ = net.Dial("tcp", "x:1")
	_ = h.DefaultTransport.(*h.Transport).Clone()
}
`
	require.NoError(t, os.WriteFile(path, []byte(src), 0o600))
	var whats []string
	for _, u := range fileOutboundUses(t, "internal/x", path) {
		whats = append(whats, u.what)
	}
	require.ElementsMatch(t, []string{
		"net/http.Client{…}", "net/http.Transport{…}", "new(net/http.Client)", "net.Dialer{…}",
		"net/http.DefaultClient", "net/http.Get", "net.Dial", "net/http.DefaultTransport",
	}, whats)
}
