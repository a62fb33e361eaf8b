// Package witness decides which witnesses an anchor needs and when it has enough proofs. This
// file holds the witness policy language, pure and identical in grammar and meaning to Orb's, so
// that an operator can move a policy string between an Orb domain and an anchord domain.
//
// A policy is rules separated by single spaces:
//
//	OutOf(N,batch|system)       at least N proofs from witnesses of that role (N ≥ 0)
//	MinPercent(P,batch|system)  at least P % (integer 0–100) of that role's witnesses
//	AND | OR                    how the batch and the system condition combine
//	LogRequired                 only witnesses with a transparency log count
//
// in this grammar (ABNF; SP is one space):
//
//	policy     = "" / body
//	body       = "LogRequired" / conditions [SP "LogRequired"]
//	conditions = group [SP [operator SP] group]  ; the two groups are of the two roles; no operator: AND
//	group      = rule [SP rule]                ; the rules of one role, OutOf and MinPercent at most once each
//	rule       = ("OutOf" / "MinPercent") "(" 1*DIGIT "," role ")"  ; OutOf's fits an int, MinPercent's is 0–100
//	operator   = "AND" / "OR"
//	role       = "batch" / "system"
//
// The empty policy is MinPercent(100,batch) AND MinPercent(100,system). There is no grouping or
// precedence: one condition per role, one operator. As in Orb, OutOf(N,role) leaves that role's
// percentage at 100 unless N is 0 (then the percentage drops to 0 too; rules apply in order), and
// a role is satisfied when either its count or its percentage is reached; a role with no
// witnesses at all counts as 100 %.
//
// Where this differs from Orb, on purpose: Orb takes any sequence of tokens, the last operator
// winning wherever it stands, so "AND", "OR OR" or "OutOf(1,system) AND" were policies, silently
// read as something else; here anything outside the grammar is refused. Tokens must be written
// Name(…) with the parentheses (Orb strips the first and last character without looking, and
// panics on a bare "OutOf"), and numbers in digits (Orb's strconv.Atoi also takes "+2"); a
// policy is at most MaxPolicyLength bytes; Select asks exactly ⌈P·total/100⌉ witnesses where
// Orb's float64 arithmetic occasionally asks one more (7 % of 100 gives 8 there), and Select
// returns each witness once where Orb's AND lists the common ones twice and leaves its caller to
// remove them.
package witness

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Role is the reason a witness is asked: Orb's "type" of a witness.
type Role string

const (
	// RoleBatch is a witness because it is the anchor origin of a DID in the batch.
	RoleBatch Role = "batch"
	// RoleSystem is a witness because this domain invited it (its witnesses collection).
	RoleSystem Role = "system"
)

// Operator combines the batch condition with the system condition.
type Operator string

// The two operators. The zero Operator behaves as OperatorAND.
const (
	OperatorAND Operator = "AND"
	OperatorOR  Operator = "OR"
)

// Policy tokens, as Orb spells them.
const (
	tokenOutOf       = "OutOf"
	tokenMinPercent  = "MinPercent"
	tokenLogRequired = "LogRequired"
	maxPercent       = 100
)

// MaxPolicyLength bounds the policy text Parse accepts. Real policies are a few dozen bytes.
const MaxPolicyLength = 1024

// ErrWitnessesNotFound is wrapped by Select when fewer witnesses are eligible than the policy
// needs. The text is Orb's.
var ErrWitnessesNotFound = errors.New("witnesses not found")

// Witness is one candidate or asked witness of an anchor.
type Witness struct {
	// URI is the witness's actor IRI; witnesses are the same witness when their URIs are equal.
	URI string
	// Role is batch or system. A domain that is both appears twice, once per role, and one
	// proof from it counts for both roles.
	Role Role
	// HasLog reports that the witness keeps a transparency log (Orb's hasLog, learnt from its
	// WebFinger ledger type).
	HasLog bool
	// Selected reports that the witness was asked; Select sets it on what it returns.
	Selected bool
	// HasProof reports that the witness's proof has arrived; Evaluate counts these.
	HasProof bool
	// LogVerified reports that the credential was found in the witness's log where its proof
	// promised it would be. Under LogRequired only such proofs count: a witness with a log
	// that has not (yet) shown the entry is not known to have logged anything.
	LogVerified bool
}

// Policy is a parsed witness policy. Compare policies with ==; String gives the canonical text.
type Policy struct {
	MinNumberBatch   int
	MinNumberSystem  int
	MinPercentBatch  int
	MinPercentSystem int
	Operator         Operator
	LogRequired      bool
}

// DefaultPolicy is the empty policy: every batch witness and every system witness.
func DefaultPolicy() Policy {
	return Policy{MinPercentBatch: maxPercent, MinPercentSystem: maxPercent, Operator: OperatorAND}
}

// Parse reads a policy. The error texts are Orb's where Orb refuses the input too, including its
// habit of calling the MinPercent argument "the first argument for OutOf policy", so that
// messages an operator knows from Orb read the same here; the grammar's own refusals have texts
// of ours.
func Parse(text string) (Policy, error) {
	p := DefaultPolicy()
	if text == "" {
		return p, nil
	}
	if len(text) > MaxPolicyLength {
		return Policy{}, fmt.Errorf("parse witness policy: longer than %d bytes", MaxPolicyLength)
	}
	// Orb splits on single spaces, so a doubled space is an empty token and an error; kept.
	tokens := strings.Split(text, " ")
	// groups[0] holds the rules of the first role, groups[1] those of the second, after the
	// operator if there is one; cur is the group being read.
	var groups [2][]rule
	cur := 0
	operator := ""
	for i, token := range tokens {
		switch token {
		case tokenLogRequired:
			if i != len(tokens)-1 {
				return Policy{}, fmt.Errorf("%s must be the last rule", tokenLogRequired)
			}
			p.LogRequired = true
			continue
		case string(OperatorAND), string(OperatorOR):
			switch {
			case operator != "":
				return Policy{}, fmt.Errorf("one operator at most: %s after %s", token, operator)
			case len(groups[0]) == 0 || cur == 1:
				return Policy{}, fmt.Errorf("operator %s must stand between the rules of two roles", token)
			}
			operator, cur = token, 1
			continue
		}
		r, err := parseRule(token)
		if err != nil {
			return Policy{}, err
		}
		if g := groups[cur]; len(g) > 0 && g[0].role != r.role {
			if cur == 1 {
				return Policy{}, fmt.Errorf("the rules of role '%s' must stand together", r.role)
			}
			cur = 1 // the second role's rules, combined with AND
		}
		for _, o := range groups[cur] {
			if o.kind == r.kind {
				return Policy{}, fmt.Errorf("role '%s' has two %s rules", r.role, r.kind)
			}
		}
		groups[cur] = append(groups[cur], r)
	}
	if operator != "" {
		switch {
		case len(groups[1]) == 0:
			return Policy{}, fmt.Errorf("operator %s must stand between the rules of two roles", operator)
		case groups[0][0].role == groups[1][0].role:
			return Policy{}, fmt.Errorf("operator %s must stand between the rules of two roles, not of %s twice", operator, groups[0][0].role)
		}
		p.Operator = Operator(operator)
	}
	for _, g := range groups {
		for _, r := range g {
			r.apply(&p)
		}
	}
	return p, nil
}

// rule is one OutOf or MinPercent of a policy, checked: applying it cannot fail.
type rule struct {
	kind string // tokenOutOf or tokenMinPercent
	args string // between the parentheses
	role Role
}

func parseRule(token string) (rule, error) {
	var check Policy
	var r rule
	var err error
	switch {
	case strings.HasPrefix(token, tokenOutOf+"(") && strings.HasSuffix(token, ")"):
		r = rule{kind: tokenOutOf, args: token[len(tokenOutOf)+1 : len(token)-1]}
		err = check.applyOutOf(r.args)
	case strings.HasPrefix(token, tokenMinPercent+"(") && strings.HasSuffix(token, ")"):
		r = rule{kind: tokenMinPercent, args: token[len(tokenMinPercent)+1 : len(token)-1]}
		err = check.applyMinPercent(r.args)
	default:
		return rule{}, fmt.Errorf("rule not supported: %s", token)
	}
	if err != nil {
		return rule{}, err
	}
	_, role, _ := strings.Cut(r.args, ",")
	r.role = Role(role)
	return r, nil
}

func (r rule) apply(p *Policy) {
	if r.kind == tokenOutOf {
		_ = p.applyOutOf(r.args)
		return
	}
	_ = p.applyMinPercent(r.args)
}

func (p *Policy) applyOutOf(args string) error {
	parts := strings.Split(args, ",")
	if len(parts) != 2 {
		return fmt.Errorf("expected 2 but got %d arguments for OutOf policy", len(parts))
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil {
		return fmt.Errorf("first argument for OutOf policy must be an integer: %w", err)
	}
	if n < 0 {
		return fmt.Errorf("first argument[%d] for OutOf policy rule must be 0 or positive integer", n)
	}
	if !digits(parts[0]) {
		return fmt.Errorf("first argument for OutOf policy must be written in digits: %s", parts[0])
	}
	switch Role(parts[1]) {
	case RoleSystem:
		p.MinNumberSystem = n
		if n == 0 {
			p.MinPercentSystem = 0
		}
	case RoleBatch:
		p.MinNumberBatch = n
		if n == 0 {
			p.MinPercentBatch = 0
		}
	default:
		return fmt.Errorf("role '%s' not supported for OutOf policy", parts[1])
	}
	return nil
}

func (p *Policy) applyMinPercent(args string) error {
	parts := strings.Split(args, ",")
	if len(parts) != 2 {
		return fmt.Errorf("expected 2 but got %d arguments for MinPercent policy", len(parts))
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil {
		return fmt.Errorf("first argument for OutOf policy must be an integer between 0 and 100: %w", err)
	}
	if n < 0 || n > maxPercent {
		return errors.New("first argument for OutOf policy must be an integer between 0 and 100")
	}
	if !digits(parts[0]) {
		return fmt.Errorf("first argument for MinPercent policy must be written in digits: %s", parts[0])
	}
	switch Role(parts[1]) {
	case RoleSystem:
		p.MinPercentSystem = n
	case RoleBatch:
		p.MinPercentBatch = n
	default:
		return fmt.Errorf("role '%s' not supported for MinPercent policy", parts[1])
	}
	return nil
}

// digits reports whether s is made of ASCII digits only (strconv.Atoi also takes a sign).
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// String is the canonical text of p: the batch tokens, the operator, the system tokens, then
// LogRequired. A role left at its default (no count, 100 %) is omitted unless the operator is OR,
// where leaving it out would change what a reader sees combined. Parse(p.String()) == p for every
// Policy that Parse returns.
func (p Policy) String() string {
	batch := roleTokens(p.MinNumberBatch, p.MinPercentBatch, RoleBatch, p.Operator == OperatorOR)
	system := roleTokens(p.MinNumberSystem, p.MinPercentSystem, RoleSystem, p.Operator == OperatorOR)
	var tokens []string
	tokens = append(tokens, batch...)
	if p.Operator == OperatorOR || (len(batch) > 0 && len(system) > 0) {
		tokens = append(tokens, string(p.operator()))
	}
	tokens = append(tokens, system...)
	if p.LogRequired {
		tokens = append(tokens, tokenLogRequired)
	}
	return strings.Join(tokens, " ")
}

// roleTokens writes one role's condition. OutOf comes first because OutOf(0,…) also resets the
// percentage, which a following MinPercent then sets; a count of 0 is never written as OutOf.
func roleTokens(number, percent int, role Role, always bool) []string {
	var tokens []string
	if number != 0 {
		tokens = append(tokens, fmt.Sprintf("%s(%d,%s)", tokenOutOf, number, role))
	}
	if percent != maxPercent || (always && number == 0) {
		tokens = append(tokens, fmt.Sprintf("%s(%d,%s)", tokenMinPercent, percent, role))
	}
	return tokens
}

func (p Policy) operator() Operator {
	if p.Operator == OperatorOR {
		return OperatorOR
	}
	return OperatorAND
}

// Evaluate reports whether the proofs gathered so far satisfy p. witnesses is every witness
// recorded for the anchor, asked or not; those with HasProof set have answered. A witness of
// another role is ignored, and under LogRequired a proof counts only from a witness with a log
// whose entry has been verified there (the witness still counts in the total either way).
// Orb counts a logged witness's proof at once; here LogRequired means logged, not promised.
func (p Policy) Evaluate(witnesses []Witness) bool {
	var totalBatch, gotBatch, totalSystem, gotSystem int
	for _, w := range witnesses {
		counts := w.HasProof && (!p.LogRequired || (w.HasLog && w.LogVerified))
		switch w.Role {
		case RoleBatch:
			totalBatch++
			if counts {
				gotBatch++
			}
		case RoleSystem:
			totalSystem++
			if counts {
				gotSystem++
			}
		}
	}
	batch := satisfied(gotBatch, totalBatch, p.MinNumberBatch, p.MinPercentBatch)
	system := satisfied(gotSystem, totalSystem, p.MinNumberSystem, p.MinPercentSystem)
	if p.operator() == OperatorOR {
		return batch || system
	}
	return batch && system
}

// satisfied is Orb's per-role test in integers: got/total ≥ percent/100 is got·100 ≥ percent·total,
// which agrees with Orb's float64 comparison for every count a domain can have, and total 0 is 100 %.
func satisfied(got, total, minNumber, minPercent int) bool {
	if minNumber != 0 && got >= minNumber {
		return true
	}
	return total == 0 || got*maxPercent >= minPercent*total
}

// Select chooses the fewest witnesses to ask so that their proofs could satisfy p, as Orb does:
//
//   - a witness is eligible unless its URI is in exclude or LogRequired holds and it has no log;
//   - under AND, witnesses eligible in both roles are always asked (one proof serves both);
//   - each role needs its count if it has one, else ⌈percent × all witnesses of the role⌉, the
//     total including ineligible ones; the rest of the need is drawn at random from that role's
//     other eligible witnesses, and too few of them is ErrWitnessesNotFound;
//   - a role with no eligible batch witness asks none (not an error), unlike the system role;
//   - AND asks the union; OR asks the system choice if the batch choice is empty or larger,
//     else the batch choice.
//
// The result lists each URI once, with Selected set. rng drives the random draw, so a seeded
// source gives a repeatable choice; nil uses math/rand/v2's shared source.
func (p Policy) Select(rng *rand.Rand, candidates []Witness, exclude ...string) ([]Witness, error) {
	excluded := make(map[string]bool, len(exclude))
	for _, uri := range exclude {
		excluded[uri] = true
	}
	var eligibleBatch, eligibleSystem []Witness
	var totalBatch, totalSystem int
	for _, w := range candidates {
		ok := (!p.LogRequired || w.HasLog) && !excluded[w.URI]
		switch w.Role {
		case RoleBatch:
			totalBatch++
			if ok {
				eligibleBatch = append(eligibleBatch, w)
			}
		case RoleSystem:
			totalSystem++
			if ok {
				eligibleSystem = append(eligibleSystem, w)
			}
		}
	}
	var common []Witness
	if p.operator() == OperatorAND {
		common = intersection(eligibleBatch, eligibleSystem)
	}
	var batch []Witness
	if len(eligibleBatch) > 0 {
		var err error
		batch, err = selectMin(rng, eligibleBatch, p.MinNumberBatch, p.MinPercentBatch, totalBatch, common)
		if err != nil {
			return nil, fmt.Errorf("select batch witnesses (%d eligible of %d): %w", len(eligibleBatch), totalBatch, err)
		}
	}
	system, err := selectMin(rng, eligibleSystem, p.MinNumberSystem, p.MinPercentSystem, totalSystem, common)
	if err != nil {
		return nil, fmt.Errorf("select system witnesses (%d eligible of %d): %w", len(eligibleSystem), totalSystem, err)
	}
	var chosen []Witness
	switch {
	case p.operator() == OperatorAND:
		chosen = append(batch, system...)
	case len(batch) == 0 || len(system) < len(batch):
		chosen = system
	default:
		chosen = batch
	}
	return unique(chosen), nil
}

// selectMin takes all of preferred and draws the rest of the role's need from eligible.
func selectMin(rng *rand.Rand, eligible []Witness, minNumber, minPercent, total int, preferred []Witness) ([]Witness, error) {
	need := minNumber
	if minNumber <= 0 {
		need = (minPercent*total + maxPercent - 1) / maxPercent
	}
	need -= len(preferred)
	pool := difference(eligible, preferred)
	if need > len(pool) {
		return nil, fmt.Errorf("unable to select %d witnesses from witness array of length %d: %w",
			need, len(pool), ErrWitnessesNotFound)
	}
	selected := append([]Witness(nil), preferred...)
	switch {
	case need <= 0:
	case need == len(pool):
		selected = append(selected, pool...)
	default:
		// A partial Fisher–Yates shuffle: the first need slots end up a uniform random draw.
		for i := range need {
			j := i + intN(rng, len(pool)-i)
			pool[i], pool[j] = pool[j], pool[i]
		}
		selected = append(selected, pool[:need]...)
	}
	return selected, nil
}

func intN(rng *rand.Rand, n int) int {
	if rng == nil {
		return rand.IntN(n)
	}
	return rng.IntN(n)
}

// intersection lists the witnesses of b whose URI is also in a, each once, in b's order.
func intersection(a, b []Witness) []Witness {
	inA := make(map[string]bool, len(a))
	for _, w := range a {
		inA[w.URI] = true
	}
	var out []Witness
	for _, w := range b {
		if inA[w.URI] {
			out = append(out, w)
			inA[w.URI] = false
		}
	}
	return out
}

// difference lists the witnesses of a whose URI is not in b, in a's order, as a new slice.
func difference(a, b []Witness) []Witness {
	inB := make(map[string]bool, len(b))
	for _, w := range b {
		inB[w.URI] = true
	}
	var out []Witness
	for _, w := range a {
		if !inB[w.URI] {
			out = append(out, w)
		}
	}
	return out
}

func unique(ws []Witness) []Witness {
	seen := make(map[string]bool, len(ws))
	out := make([]Witness, 0, len(ws))
	for _, w := range ws {
		if seen[w.URI] {
			continue
		}
		seen[w.URI] = true
		w.Selected = true
		out = append(out, w)
	}
	return out
}
