package witness

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text      string
		want      Policy
		canonical string
	}{
		{"", Policy{MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND}, ""},
		// The examples of Orb's documentation, tests and CLI documentation.
		{"OutOf(2,system)", Policy{MinNumberSystem: 2, MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND}, "OutOf(2,system)"},
		{"OutOf(2,batch)", Policy{MinNumberBatch: 2, MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND}, "OutOf(2,batch)"},
		{"MinPercent(50,batch)", Policy{MinPercentBatch: 50, MinPercentSystem: 100, Operator: OperatorAND}, "MinPercent(50,batch)"},
		{"MinPercent(70,batch)", Policy{MinPercentBatch: 70, MinPercentSystem: 100, Operator: OperatorAND}, "MinPercent(70,batch)"},
		{
			"MinPercent(50,batch) AND MinPercent(50,system)",
			Policy{MinPercentBatch: 50, MinPercentSystem: 50, Operator: OperatorAND},
			"MinPercent(50,batch) AND MinPercent(50,system)",
		},
		{
			"MinPercent(30,system) OR MinPercent(70,batch)",
			Policy{MinPercentBatch: 70, MinPercentSystem: 30, Operator: OperatorOR},
			"MinPercent(70,batch) OR MinPercent(30,system)",
		},
		{
			"OutOf(3,system) AND OutOf(1,batch)",
			Policy{MinNumberBatch: 1, MinNumberSystem: 3, MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND},
			"OutOf(1,batch) AND OutOf(3,system)",
		},
		{
			"OutOf(3,system) AND OutOf(1,batch) LogRequired",
			Policy{MinNumberBatch: 1, MinNumberSystem: 3, MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND, LogRequired: true},
			"OutOf(1,batch) AND OutOf(3,system) LogRequired",
		},
		{
			"MinPercent(100,batch) AND OutOf(1,system)",
			Policy{MinNumberSystem: 1, MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND},
			"OutOf(1,system)",
		},
		{
			"MinPercent(100,batch) AND MinPercent(50,system)",
			Policy{MinPercentBatch: 100, MinPercentSystem: 50, Operator: OperatorAND},
			"MinPercent(50,system)",
		},
		{"LogRequired", Policy{MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND, LogRequired: true}, "LogRequired"},
		// OutOf(0,role) drops that role's percentage to 0 as well.
		{"OutOf(0,batch)", Policy{MinPercentSystem: 100, Operator: OperatorAND}, "MinPercent(0,batch)"},
		{"OutOf(0,batch) MinPercent(40,batch)", Policy{MinPercentBatch: 40, MinPercentSystem: 100, Operator: OperatorAND}, "MinPercent(40,batch)"},
		{"MinPercent(40,batch) OutOf(0,batch)", Policy{MinPercentSystem: 100, Operator: OperatorAND}, "MinPercent(0,batch)"},
		{
			"OutOf(3,batch) MinPercent(20,batch)",
			Policy{MinNumberBatch: 3, MinPercentBatch: 20, MinPercentSystem: 100, Operator: OperatorAND},
			"OutOf(3,batch) MinPercent(20,batch)",
		},
		// The canonical form of OR with a role left at its default names that role.
		{"MinPercent(100,batch) OR OutOf(1,system)", Policy{MinNumberSystem: 1, MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorOR}, "MinPercent(100,batch) OR OutOf(1,system)"},
		{"MinPercent(100,system) OR MinPercent(100,batch) LogRequired", Policy{MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorOR, LogRequired: true},
			"MinPercent(100,batch) OR MinPercent(100,system) LogRequired"},
		{"MinPercent(007,system)", Policy{MinPercentBatch: 100, MinPercentSystem: 7, Operator: OperatorAND}, "MinPercent(7,system)"},
		// Without an operator, the conditions of the two roles combine with AND.
		{"OutOf(1,system) OutOf(2,batch)", Policy{MinNumberBatch: 2, MinNumberSystem: 1, MinPercentBatch: 100, MinPercentSystem: 100, Operator: OperatorAND},
			"OutOf(2,batch) AND OutOf(1,system)"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.text)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.canonical, got.String())
			again, err := Parse(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want string
	}{
		{"Test(2,3)", "rule not supported: Test(2,3)"},
		{"and", "rule not supported: and"},
		{"OutOf", "rule not supported: OutOf"},
		{"OutOf(", "rule not supported: OutOf("},
		{"OutOf[2,system]", "rule not supported: OutOf[2,system]"},
		{"MinPercentage(2,system)", "rule not supported: MinPercentage(2,system)"},
		{"OutOf(2,system)  AND OutOf(1,batch)", "rule not supported: "},
		{" OutOf(2,system)", "rule not supported: "},
		{"OutOf(2,system) ", "rule not supported: "},
		{"OutOf(2,system)\tAND", "rule not supported: OutOf(2,system)\tAND"},
		{"OutOf(a,system)", "first argument for OutOf policy must be an integer: strconv.Atoi: parsing \"a\": invalid syntax"},
		{"OutOf(99999999999999999999,system)", "first argument for OutOf policy must be an integer: strconv.Atoi: parsing \"99999999999999999999\": value out of range"},
		{"OutOf(-1,system)", "first argument[-1] for OutOf policy rule must be 0 or positive integer"},
		{"OutOf(2,invalid)", "role 'invalid' not supported for OutOf policy"},
		{"OutOf(2,System)", "role 'System' not supported for OutOf policy"},
		{"OutOf(2,system,other)", "expected 2 but got 3 arguments for OutOf policy"},
		{"OutOf()", "expected 2 but got 1 arguments for OutOf policy"},
		{"OutOf( 2,system)", "rule not supported: OutOf("},
		{"MinPercent(70,invalid)", "role 'invalid' not supported for MinPercent policy"},
		{"MinPercent(invalid,batch)", "first argument for OutOf policy must be an integer between 0 and 100: strconv.Atoi: parsing \"invalid\": invalid syntax"},
		{"MinPercent(0.2,system)", "first argument for OutOf policy must be an integer between 0 and 100: strconv.Atoi: parsing \"0.2\": invalid syntax"},
		{"MinPercent(150,batch)", "first argument for OutOf policy must be an integer between 0 and 100"},
		{"MinPercent(-1,batch)", "first argument for OutOf policy must be an integer between 0 and 100"},
		{"MinPercent(20,system,other)", "expected 2 but got 3 arguments for MinPercent policy"},
		{"OutOf(1,system) " + strings.Repeat("AND ", 300), "parse witness policy: longer than 1024 bytes"},
		// Outside the grammar, where Orb took the last operator wherever it stood.
		{"AND", "operator AND must stand between the rules of two roles"},
		{"OR", "operator OR must stand between the rules of two roles"},
		{"OR OR", "operator OR must stand between the rules of two roles"},
		{"OutOf(1,system) AND", "operator AND must stand between the rules of two roles"},
		{"OR OutOf(1,system) AND", "operator OR must stand between the rules of two roles"},
		{"OutOf(1,batch) AND OR OutOf(1,system)", "one operator at most: OR after AND"},
		{"OutOf(1,batch) AND OutOf(1,system) OR MinPercent(5,batch)", "one operator at most: OR after AND"},
		{"OutOf(1,system) AND OutOf(2,system)", "operator AND must stand between the rules of two roles, not of system twice"},
		{"OutOf(1,batch) OutOf(1,system) MinPercent(5,batch)", "the rules of role 'batch' must stand together"},
		{"OutOf(1,batch) OutOf(1,system) AND MinPercent(5,batch)", "operator AND must stand between the rules of two roles"},
		{"OutOf(1,system) OutOf(2,system)", "role 'system' has two OutOf rules"},
		{"LogRequired OutOf(1,system)", "LogRequired must be the last rule"},
		{"LogRequired LogRequired", "LogRequired must be the last rule"},
		{"OutOf(1,system) LogRequired AND OutOf(1,batch)", "LogRequired must be the last rule"},
		{"OutOf(+2,system)", "first argument for OutOf policy must be written in digits: +2"},
		{"OutOf(-0,system)", "first argument for OutOf policy must be written in digits: -0"},
		{"MinPercent(+7,system)", "first argument for MinPercent policy must be written in digits: +7"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.text)
			require.EqualError(t, err, tt.want)
			require.Equal(t, Policy{}, got)
		})
	}
}

func TestPolicyStringOfUnparsedValues(t *testing.T) {
	t.Parallel()
	// The zero Operator reads as AND, so a Policy built in code prints a text Parse accepts.
	p := Policy{MinNumberSystem: 2, MinPercentBatch: 100, MinPercentSystem: 100}
	require.Equal(t, "OutOf(2,system)", p.String())
	got, err := Parse(p.String())
	require.NoError(t, err)
	require.Equal(t, DefaultPolicy().Operator, got.Operator)
	require.Equal(t, p.MinNumberSystem, got.MinNumberSystem)
	require.Equal(t, DefaultPolicy(), mustParse(t, ""))
}

func mustParse(t *testing.T, text string) Policy {
	t.Helper()
	p, err := Parse(text)
	require.NoError(t, err)
	return p
}

// ws builds witnesses from compact specs "role:name[:log][:proof]".
func ws(specs ...string) []Witness {
	out := make([]Witness, 0, len(specs))
	for _, s := range specs {
		parts := strings.Split(s, ":")
		w := Witness{URI: "https://" + parts[1] + ".example/services/orb"}
		switch parts[0] {
		case "b":
			w.Role = RoleBatch
		case "s":
			w.Role = RoleSystem
		default:
			w.Role = Role(parts[0])
		}
		for _, flag := range parts[2:] {
			switch flag {
			case "log":
				w.HasLog = true
			case "proof":
				w.HasProof = true
			case "verified":
				w.LogVerified = true
			}
		}
		out = append(out, w)
	}
	return out
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		policy    string
		witnesses []Witness
		want      bool
	}{
		{"default, nothing recorded", "", nil, true},
		{"default, all proofs", "", ws("b:a:proof", "s:w1:proof", "s:w2:proof"), true},
		{"default, one system missing", "", ws("b:a:proof", "s:w1:proof", "s:w2"), false},
		{"default, batch missing", "", ws("b:a", "s:w1:proof"), false},
		{"default, no batch witnesses counts as 100%", "", ws("s:w1:proof"), true},
		{"OutOf 2 system, two of three", "OutOf(2,system)", ws("s:w1:proof", "s:w2:proof", "s:w3"), true},
		{"OutOf 2 system, one of three", "OutOf(2,system)", ws("s:w1:proof", "s:w2", "s:w3"), false},
		{"OutOf 2 system, one of one is 100%", "OutOf(2,system)", ws("s:w1:proof"), true},
		{"OutOf 2 system, batch still 100%", "OutOf(2,system)", ws("b:a", "s:w1:proof", "s:w2:proof"), false},
		{"OutOf 0 system needs nothing", "OutOf(0,system)", ws("s:w1", "s:w2"), true},
		{"MinPercent 50 batch, half", "MinPercent(50,batch)", ws("b:a:proof", "b:c"), true},
		{"MinPercent 50 batch, a third", "MinPercent(50,batch)", ws("b:a:proof", "b:c", "b:d"), false},
		{"MinPercent 34 system, a third", "MinPercent(34,system)", ws("s:w1:proof", "s:w2", "s:w3"), false},
		{"MinPercent 33 system, a third", "MinPercent(33,system)", ws("s:w1:proof", "s:w2", "s:w3"), true},
		{"OR, system enough", "MinPercent(30,system) OR MinPercent(70,batch)", ws("b:a", "b:c", "s:w1:proof", "s:w2", "s:w3"), true},
		{"OR, batch enough", "MinPercent(30,system) OR MinPercent(70,batch)", ws("b:a:proof", "s:w1", "s:w2", "s:w3", "s:w4"), true},
		{"OR, neither", "MinPercent(30,system) OR MinPercent(70,batch)", ws("b:a:proof", "b:c", "s:w1", "s:w2", "s:w3", "s:w4"), false},
		{"AND, both", "MinPercent(50,batch) AND MinPercent(50,system)", ws("b:a:proof", "b:c", "s:w1:proof", "s:w2"), true},
		{"LogRequired, proof without log", "OutOf(1,system) LogRequired", ws("s:w1:proof", "s:w2:log"), false},
		{"LogRequired, logged proof not verified yet", "OutOf(1,system) LogRequired", ws("s:w1:proof", "s:w2:log:proof"), false},
		{"LogRequired, logged proof verified", "OutOf(1,system) LogRequired", ws("s:w1:proof", "s:w2:log:proof:verified"), true},
		{"LogRequired, verified entry of a logless witness", "OutOf(1,system) LogRequired", ws("s:w1:proof:verified"), false},
		{"LogRequired, logless witness still in total", "MinPercent(50,system) LogRequired", ws("s:w1:proof", "s:w2:log:proof:verified", "s:w3", "s:w4"), false},
		{"without LogRequired, an unverified logged proof counts at once", "OutOf(1,system)", ws("s:w1", "s:w2:log:proof"), true},
		{"other roles ignored", "", ws("b:a:proof", "observer:x"), true},
		{"one domain in both roles", "", ws("b:a:proof", "s:a:proof", "s:w1"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, mustParse(t, tt.policy).Evaluate(tt.witnesses))
		})
	}
}

func uris(ws []Witness) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, strings.TrimSuffix(strings.TrimPrefix(w.URI, "https://"), ".example/services/orb"))
	}
	slices.Sort(out)
	return out
}

func TestSelect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		policy     string
		candidates []Witness
		exclude    []string
		// want lists the names that must be chosen; n is the total chosen (some drawn at random
		// from pool).
		want []string
		pool []string
		n    int
		err  bool
	}{
		{"default asks everyone", "", ws("b:a", "b:c", "s:w1", "s:w2"), nil, []string{"a", "c", "w1", "w2"}, nil, 4, false},
		{"no candidates, no witnesses", "", nil, nil, nil, nil, 0, false},
		{"OutOf 1 system picks one", "OutOf(1,system)", ws("b:a", "s:w1", "s:w2", "s:w3"), nil, []string{"a"}, []string{"w1", "w2", "w3"}, 2, false},
		{"OutOf 2 system picks two", "OutOf(2,system)", ws("s:w1", "s:w2", "s:w3"), nil, nil, []string{"w1", "w2", "w3"}, 2, false},
		{"OutOf 3 system of two", "OutOf(3,system)", ws("s:w1", "s:w2"), nil, nil, nil, 0, true},
		{"MinPercent 50 of 3 rounds up", "MinPercent(50,system) MinPercent(0,batch)", ws("b:a", "s:w1", "s:w2", "s:w3"), nil, nil, []string{"w1", "w2", "w3"}, 2, false},
		{"MinPercent 7 of 100 is 7", "MinPercent(7,system) OutOf(0,batch)", manySystem(100), nil, nil, nil, 7, false},
		{"percent counts ineligible in the total", "MinPercent(50,system)", ws("s:w1", "s:w2", "s:w3", "s:w4"), []string{"https://w1.example/services/orb", "https://w2.example/services/orb"}, []string{"w3", "w4"}, nil, 2, false},
		{"exclusion leaves too few", "MinPercent(75,system)", ws("s:w1", "s:w2", "s:w3", "s:w4"), []string{"https://w1.example/services/orb", "https://w2.example/services/orb"}, nil, nil, 0, true},
		{"LogRequired skips logless", "OutOf(1,system) LogRequired", ws("s:w1", "s:w2:log"), nil, []string{"w2"}, nil, 1, false},
		{"LogRequired leaves none", "OutOf(1,system) LogRequired", ws("s:w1", "s:w2"), nil, nil, nil, 0, true},
		{"no eligible batch witness is not an error", "", ws("b:a", "s:w1:log"), []string{"https://a.example/services/orb"}, []string{"w1"}, nil, 1, false},
		{"no eligible system witness is an error when one is needed", "", ws("b:a", "s:w1"), []string{"https://w1.example/services/orb"}, nil, nil, 0, true},
		{"AND prefers the common witness", "OutOf(1,batch) AND OutOf(1,system)", ws("b:a", "b:c", "b:d", "s:c", "s:w1", "s:w2"), nil, []string{"c"}, nil, 1, false},
		{"AND asks every common witness even past the need", "OutOf(1,batch) AND OutOf(1,system)", ws("b:a", "b:c", "s:a", "s:c", "s:w1"), nil, []string{"a", "c"}, nil, 2, false},
		{"OR takes the smaller system choice", "OutOf(2,batch) OR OutOf(1,system)", ws("b:a", "b:c", "s:w1", "s:w2"), nil, nil, []string{"w1", "w2"}, 1, false},
		{"OR keeps batch on a tie", "OutOf(1,batch) OR OutOf(1,system)", ws("b:a", "b:c", "s:w1", "s:w2"), nil, nil, []string{"a", "c"}, 1, false},
		{"OR with no system witnesses asks nobody", "OutOf(1,batch) OR MinPercent(50,system)", ws("b:a", "b:c"), nil, nil, nil, 0, false},
		{"a count with no system witnesses fails even under OR", "OutOf(1,batch) OR OutOf(1,system)", ws("b:a", "b:c"), nil, nil, nil, 0, true},
		{"OR with no eligible batch asks system", "MinPercent(50,batch) OR OutOf(1,system)", ws("b:a", "s:w1", "s:w2"), []string{"https://a.example/services/orb"}, nil, []string{"w1", "w2"}, 1, false},
		{"OR does not share common witnesses", "OutOf(2,batch) OR OutOf(2,system)", ws("b:a", "b:c", "s:a", "s:w1"), nil, []string{"a", "c"}, nil, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustParse(t, tt.policy)
			for seed := range uint64(20) {
				got, err := p.Select(rand.New(rand.NewPCG(seed, 1)), tt.candidates, tt.exclude...)
				if tt.err {
					require.ErrorIs(t, err, ErrWitnessesNotFound)
					require.Nil(t, got)
					return
				}
				require.NoError(t, err)
				require.Len(t, got, tt.n)
				names := uris(got)
				require.Equal(t, len(names), len(slices.Compact(slices.Clone(names))), "each witness once: %v", names)
				for _, w := range tt.want {
					require.Contains(t, names, w)
				}
				if tt.pool != nil {
					for _, name := range names {
						if !slices.Contains(tt.want, name) {
							require.Contains(t, tt.pool, name)
						}
					}
				}
				for _, w := range got {
					require.True(t, w.Selected)
				}
			}
		})
	}
}

func manySystem(n int) []Witness {
	out := make([]Witness, n)
	for i := range out {
		out[i] = Witness{URI: "https://w" + strings.Repeat("x", i) + ".example/services/orb", Role: RoleSystem}
	}
	return out
}

func TestSelectIsRepeatableAndSpreads(t *testing.T) {
	t.Parallel()
	p := mustParse(t, "OutOf(1,system)")
	candidates := ws("s:w1", "s:w2", "s:w3", "s:w4")
	first, err := p.Select(rand.New(rand.NewPCG(7, 7)), candidates)
	require.NoError(t, err)
	again, err := p.Select(rand.New(rand.NewPCG(7, 7)), candidates)
	require.NoError(t, err)
	require.Equal(t, first, again)

	seen := map[string]int{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 400 {
		got, err := p.Select(rng, candidates)
		require.NoError(t, err)
		require.Len(t, got, 1)
		seen[got[0].URI]++
	}
	require.Len(t, seen, 4, "every candidate is drawn sometimes: %v", seen)
	for uri, n := range seen {
		require.Greater(t, n, 50, "%s drawn %d times of 400", uri, n)
	}

	// Select must not reorder the caller's slice.
	require.Equal(t, ws("s:w1", "s:w2", "s:w3", "s:w4"), candidates)

	// A nil source uses the shared one.
	got, err := p.Select(nil, candidates)
	require.NoError(t, err)
	require.Len(t, got, 1)
}

func TestSelectErrorWraps(t *testing.T) {
	t.Parallel()
	_, err := mustParse(t, "OutOf(3,system)").Select(nil, ws("s:w1"))
	require.True(t, errors.Is(err, ErrWitnessesNotFound))
	require.EqualError(t, err, "select system witnesses (1 eligible of 1): unable to select 3 witnesses from witness array of length 1: witnesses not found")
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"", "OutOf(2,system)", "MinPercent(50,batch)", "MinPercent(50,batch) AND MinPercent(50,system)",
		"MinPercent(30,system) OR MinPercent(70,batch)", "OutOf(3,system) AND OutOf(1,batch) LogRequired",
		"MinPercent(100,batch) AND OutOf(1,system)", "OutOf", "OutOf(", "OutOf()", "MinPercent(,)", "OR OR",
		"OutOf(0,batch) MinPercent(3,batch)", "OutOf(-0,system)",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse(text)
		if err != nil {
			return
		}
		again, err := Parse(p.String())
		require.NoError(t, err, "canonical form %q of %q", p.String(), text)
		require.Equal(t, p, again, "canonical form %q of %q", p.String(), text)
		require.Equal(t, p.String(), again.String())
	})
}
