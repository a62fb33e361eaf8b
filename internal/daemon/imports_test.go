package daemon

import (
	"bufio"
	"bytes"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/anchord/anchord/"

// importGraph returns, for every package of the module, its non-test imports of other packages
// of the module (module-relative paths), as go list reports them.
func importGraph(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	require.NoError(t, err, "go list")
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := strings.TrimPrefix(fields[0], module)
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	require.NoError(t, sc.Err())
	require.Contains(t, graph, "internal/daemon", "the module's packages were listed")
	return graph
}

// within reports whether pkg is dir or below it.
func within(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// isTestSupport reports whether pkg is a test-support package (a conformance suite or helpers).
func isTestSupport(pkg string) bool { return strings.HasSuffix(path.Base(pkg), "test") }

var backends = []string{"internal/store/pgstore", "internal/store/sqlitestore", "internal/pubsub/amqppubsub", "internal/pubsub/mempubsub"}

// importRules checks the house's import rules and returns one line per violation.
func importRules(graph map[string][]string) []string {
	var bad []string
	for pkg, imports := range graph {
		for _, imp := range imports {
			switch {
			case within(imp, "cmd"):
				bad = append(bad, pkg+" imports "+imp+": nothing imports cmd/")
			case within(pkg, "internal/sidetree") && !within(imp, "internal/sidetree"):
				bad = append(bad, pkg+" imports "+imp+": sidetree imports nothing of anchord's")
			case slices.Contains(backends, imp) && !within(pkg, "internal/daemon") && !within(pkg, "internal/config") &&
				!isTestSupport(pkg) && !within(pkg, path.Dir(imp)):
				bad = append(bad, pkg+" imports "+imp+": only the daemon imports storage and broker backends (config, for their defaults)")
			case isTestSupport(imp) && !isTestSupport(pkg):
				bad = append(bad, pkg+" imports "+imp+": test-support packages are for tests")
			}
		}
		bad = append(bad, backUp(graph, pkg)...)
	}
	slices.Sort(bad)
	return bad
}

// backUp finds import paths that run back up: pkg, below some directory parent, reaches a
// package outside parent that in turn reaches back into parent. Such a path makes pkg depend on
// its siblings through a stranger, which is how suites end up depending on the implementations
// they test.
func backUp(graph map[string][]string, pkg string) []string {
	parent := path.Dir(pkg)
	if parent == "internal" || parent == "." || parent == "cmd" {
		return nil
	}
	var bad []string
	for _, out := range graph[pkg] {
		if within(out, parent) {
			continue
		}
		if back, ok := reaches(graph, out, parent, map[string]bool{}); ok {
			bad = append(bad, pkg+" imports "+out+", which imports "+back+": an import runs back up into "+parent)
		}
	}
	return bad
}

// reaches reports whether from transitively imports a package within dir, and which.
func reaches(graph map[string][]string, from, dir string, seen map[string]bool) (string, bool) {
	if seen[from] {
		return "", false
	}
	seen[from] = true
	for _, imp := range graph[from] {
		if within(imp, dir) {
			return imp, true
		}
		if p, ok := reaches(graph, imp, dir, seen); ok {
			return p, true
		}
	}
	return "", false
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	require.Empty(t, importRules(importGraph(t)), "house import rules (docs/design/architecture.md)")
}

func TestImportRulesCatchEachKindOfBreak(t *testing.T) {
	t.Parallel()
	graph := map[string][]string{
		"internal/sidetree":          {"internal/store"},
		"internal/batch":             {"internal/store/pgstore", "internal/anchordtest"},
		"internal/store":             nil,
		"internal/store/pgstore":     {"internal/store"},
		"internal/anchordtest":       nil,
		"internal/ledger":            nil,
		"internal/ledger/sawtooth":   {"internal/ledger"},
		"internal/ledger/ledgertest": {"internal/devledger"},
		"internal/devledger":         {"internal/ledger/sawtooth"},
		"internal/httpapi":           {"cmd/anchord"},
		"cmd/anchord":                nil,
	}
	require.Equal(t, []string{
		"internal/batch imports internal/anchordtest: test-support packages are for tests",
		"internal/batch imports internal/store/pgstore: only the daemon imports storage and broker backends (config, for their defaults)",
		"internal/httpapi imports cmd/anchord: nothing imports cmd/",
		"internal/ledger/ledgertest imports internal/devledger, which imports internal/ledger/sawtooth: an import runs back up into internal/ledger",
		"internal/sidetree imports internal/store: sidetree imports nothing of anchord's",
	}, importRules(graph))
}
