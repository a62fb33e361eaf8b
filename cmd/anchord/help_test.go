package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestHelpGuides: serve's help is grouped under the start-up log's headings and fits 100
// columns; the top-level help lists every command the README uses; `help serve` and
// `admin --help` answer; mistakes get one line that helps.
func TestHelpGuides(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	call := func(env func(string) (string, bool), args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runWithEnv(args, env, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	code, serveHelp, _ := call(noEnv, "serve", "--help")
	require.Equal(t, 0, code)
	for _, line := range strings.Split(serveHelp, "\n") {
		require.LessOrEqual(t, utf8.RuneCountInString(line), 100, "too wide: %q", line)
	}
	var headings []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z-]+):$`).FindAllStringSubmatch(serveHelp, -1) {
		headings = append(headings, m[1])
	}
	require.Equal(t, []string{"server", "http", "storage", "sidetree", "queue", "broker", "tasks", "anchoring", "federation", "witness-log"}, headings,
		"the start-up log's groups, in its order")
	require.Regexp(t, `(?s)\nbroker:\n.*--mq-url = ""`, serveHelp)

	code, helpServe, _ := call(noEnv, "help", "serve")
	require.Equal(t, 0, code)
	require.Equal(t, serveHelp, helpServe)

	code, adminHelp, _ := call(noEnv, "admin", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, adminHelp, "dead-letters")

	// Every `anchord admin NOUN VERB` of the README is in the top-level help.
	code, top, _ := call(noEnv, "--help")
	require.Equal(t, 0, code)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	used := regexp.MustCompile(`anchord (admin [a-z-]+ [a-z-]+|[a-z]+)\b`).FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, used)
	for _, m := range used {
		words := strings.Fields(m[1])
		if len(words) == 1 && !regexp.MustCompile(`(?m)^  anchord `+words[0]+` `).MatchString(top) {
			continue // prose ("anchord keeps it"), not a command; commands are checked below
		}
		if len(words) == 3 {
			line := regexp.MustCompile(`(?m)^  anchord admin ([a-z|-]+) ([a-z|-]+)`).FindAllStringSubmatch(top, -1)
			found := false
			for _, l := range line {
				if containsWord(l[1], words[1]) && containsWord(l[2], words[2]) {
					found = true
				}
			}
			require.True(t, found, "the README uses `anchord %s`, which `anchord --help` does not list", m[1])
		}
	}
	for _, cmd := range []string{"serve", "config", "loadgen", "devledger", "version", "help"} {
		require.Regexp(t, `(?m)^  anchord `+cmd+` `, top)
	}

	code, _, stderr := call(noEnv, "serve", "--did-methd", "ion")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "unknown parameter --did-methd: did you mean --did-method?")

	code, _, stderr = call(func(k string) (string, bool) { return "ten", k == "ANCHORD_BATCH_WRITER_TIMEOUT" }, "serve")
	require.Equal(t, 2, code)
	require.Equal(t, 1, strings.Count(stderr, "ANCHORD_BATCH_WRITER_TIMEOUT"), stderr)

	code, _, stderr = call(noEnv, "serve", "--did-method", "ION!")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `invalid value "ION!" for --did-method`)
}

func containsWord(alternatives, word string) bool {
	for _, a := range strings.Split(alternatives, "|") {
		if a == word {
			return true
		}
	}
	return false
}
