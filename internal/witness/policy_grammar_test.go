package witness

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The witness policy grammar (policy.go), written again independently of the parser: each
// token is given a class, and the classes of a policy must match policyClasses.
//
//	Ob Pb   OutOf / MinPercent of the batch role, well formed
//	Os Ps   the same of the system role
//	A       AND or OR
//	L       LogRequired
//	X       anything else (a malformed rule, a lower-case operator, an empty token, …)
var policyClasses = func() *regexp.Regexp {
	group := func(r string) string { return "(O" + r + "( P" + r + ")?|P" + r + "( O" + r + ")?)" }
	conditions := "(" + group("b") + "( (A )?" + group("s") + ")?|" + group("s") + "( (A )?" + group("b") + ")?)"
	return regexp.MustCompile("^(L|" + conditions + "( L)?)$")
}()

// ruleToken is a rule as the grammar writes it.
var ruleToken = regexp.MustCompile(`^(OutOf|MinPercent)\(([0-9]+),(batch|system)\)$`)

// tokenClass classifies one token by the grammar's rules, without the parser's code.
func tokenClass(token string) string {
	switch token {
	case "AND", "OR":
		return "A"
	case "LogRequired":
		return "L"
	}
	m := ruleToken.FindStringSubmatch(token)
	if m == nil {
		return "X"
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || (m[1] == "MinPercent" && n > 100) {
		return "X"
	}
	return map[string]string{"OutOf": "O", "MinPercent": "P"}[m[1]] + m[3][:1]
}

// grammarAccepts reports whether the grammar derives text.
func grammarAccepts(text string) bool {
	if text == "" {
		return true
	}
	if len(text) > MaxPolicyLength {
		return false
	}
	var classes []string
	for _, token := range strings.Split(text, " ") {
		classes = append(classes, tokenClass(token))
	}
	return policyClasses.MatchString(strings.Join(classes, " "))
}

// expectedPolicy is what a text the grammar derives means: Orb's rules applied in order.
func expectedPolicy(t *testing.T, text string) Policy {
	t.Helper()
	p := DefaultPolicy()
	for _, token := range strings.Fields(text) {
		switch token {
		case "AND", "OR":
			p.Operator = Operator(token)
		case "LogRequired":
			p.LogRequired = true
		default:
			m := ruleToken.FindStringSubmatch(token)
			n, _ := strconv.Atoi(m[2])
			switch {
			case m[1] == "OutOf" && m[3] == "batch":
				p.MinNumberBatch = n
				if n == 0 {
					p.MinPercentBatch = 0
				}
			case m[1] == "OutOf":
				p.MinNumberSystem = n
				if n == 0 {
					p.MinPercentSystem = 0
				}
			case m[3] == "batch":
				p.MinPercentBatch = n
			default:
				p.MinPercentSystem = n
			}
		}
	}
	return p
}

// policyTokens is the alphabet the tests build policies from: well-formed rules of every class,
// and near misses of each.
var policyTokens = []string{
	// The first eleven are well formed.
	"OutOf(1,batch)", "OutOf(0,batch)", "MinPercent(50,batch)", "MinPercent(100,batch)",
	"OutOf(2,system)", "OutOf(0,system)", "MinPercent(30,system)", "MinPercent(007,system)",
	"AND", "OR", "LogRequired",
	"and", "", "OutOf(+1,system)", "OutOf(-1,batch)", "MinPercent(101,batch)", "OutOf(1,System)",
	"OutOf(1,batch", "OutOf(1,batch,x)", "MinPercent(x,system)", "Logrequired", "OutOf(99999999999999999999,system)",
}

// checkAgainstGrammar parses text and checks the parser against the grammar: it accepts exactly
// what the grammar derives, with the grammar's meaning, refuses the rest with a message, and the
// canonical form of what it accepts is derived too and parses back to the same policy.
func checkAgainstGrammar(t *testing.T, text string) {
	p, err := Parse(text)
	if !grammarAccepts(text) {
		if err == nil {
			t.Fatalf("Parse(%q) = %q, but the grammar does not derive it", text, p.String())
		}
		if err.Error() == "" {
			t.Fatalf("Parse(%q) refused it without a message", text)
		}
		return
	}
	if err != nil {
		t.Fatalf("Parse(%q): %v, but the grammar derives it", text, err)
	}
	if want := expectedPolicy(t, text); p != want {
		t.Fatalf("Parse(%q) = %+v, the grammar means %+v", text, p, want)
	}
	canonical := p.String()
	if !grammarAccepts(canonical) {
		t.Fatalf("the canonical form %q of %q is outside the grammar", canonical, text)
	}
	again, err := Parse(canonical)
	if err != nil || again != p {
		t.Fatalf("the canonical form %q of %q parses to %+v, %v", canonical, text, again, err)
	}
}

// TestPolicyGrammarExhaustively checks every policy of up to three tokens of the alphabet, and
// of up to four of its well-formed tokens (where the grammar's structure is what decides).
func TestPolicyGrammarExhaustively(t *testing.T) {
	t.Parallel()
	accepted, refused := 0, 0
	var walk func(tokens []string, alphabet []string, depth int)
	walk = func(tokens []string, alphabet []string, depth int) {
		text := strings.Join(tokens, " ")
		checkAgainstGrammar(t, text)
		if grammarAccepts(text) {
			accepted++
		} else {
			refused++
		}
		if len(tokens) == depth {
			return
		}
		for _, tok := range alphabet {
			walk(append(tokens, tok), alphabet, depth)
		}
	}
	walk(nil, policyTokens, 3)
	walk(nil, policyTokens[:11], 4)
	require.Positive(t, accepted)
	require.Positive(t, refused)
	t.Logf("%d policies the grammar derives, %d it does not", accepted, refused)
}

// TestPolicyGrammarRefusesTheReportedInputs: the inputs a probe found accepted and silently
// replaced.
func TestPolicyGrammarRefusesTheReportedInputs(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"AND", "OR", "OR OR", "OutOf(1,system) AND", "AND OutOf(1,system)", "OR OutOf(1,system) AND"} {
		require.False(t, grammarAccepts(text), text)
		_, err := Parse(text)
		require.Error(t, err, text)
	}
}

// FuzzPolicyGrammar builds policies from the fuzzer's bytes, each byte choosing a token of the
// alphabet (or, past it, a byte of its own as a token), and checks the parser against the
// grammar; the raw input is checked as a policy too.
func FuzzPolicyGrammar(f *testing.F) {
	f.Add([]byte{0, 8, 4})
	f.Add([]byte{8})
	f.Add([]byte{9, 9})
	f.Add([]byte{4, 8})
	f.Add([]byte{2, 0, 9, 6, 4, 10})
	f.Add([]byte("OutOf(1,system) AND"))
	f.Fuzz(func(t *testing.T, choices []byte) {
		var tokens []string
		for _, c := range choices {
			if int(c) < len(policyTokens) {
				tokens = append(tokens, policyTokens[c])
			} else {
				tokens = append(tokens, string(rune(c)))
			}
		}
		checkAgainstGrammar(t, strings.Join(tokens, " "))
		checkAgainstGrammar(t, string(choices))
	})
}
