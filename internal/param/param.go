// Package param binds command-line flags and their ANCHORD_* environment variables to fields:
// the parameter table of every anchord command, its --help table, and one-line errors that name
// the offending parameter. Precedence: command-line flag, then environment variable, then the
// field's value when the table was built (its default).
package param

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anchord/anchord/internal/secret"
)

// EnvPrefix prefixes every environment variable.
const EnvPrefix = "ANCHORD_"

// EnvName returns the environment variable of a parameter: ANCHORD_ + upper snake case.
func EnvName(param string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(param, "-", "_"))
}

// Param binds one command-line flag (and its environment variable) to a field. The field's
// value when the table is built is the default shown by --help, so defaults are written only
// where the Config is initialised.
type Param struct {
	name   string
	usage  string
	value  flag.Value
	secret bool
	// aliases are other names of the same parameter: Orb's, where ours differs.
	aliases []string
	// envs are further environment variables, taken verbatim (Orb's, e.g. ORB_AUTH_TOKENS).
	envs []string
	// refusal, when set, makes this an Orb parameter anchord has no knob for: setting it (by
	// flag or by its environment variables) fails with this text, which says what to use.
	refusal string
	// group and groupRank file the parameter under a heading of --help (InGroup).
	group     string
	groupRank int
}

// Name returns the flag name.
func (p Param) Name() string { return p.name }

// Env returns p reading names as further environment variables, verbatim (Orb's variables, so
// that an Orb deployment's environment carries over). ANCHORD_* variables win over them.
func (p Param) Env(names ...string) Param {
	p.envs = append(p.envs, names...)
	return p
}

// Also returns p accepting names as further flag names (and their environment variables): an
// Orb operator's name for the same parameter. The primary name wins when both are set.
func (p Param) Also(names ...string) Param {
	p.aliases = append(p.aliases, names...)
	return p
}

// Millis returns p (a Duration) also taking a bare integer as milliseconds, Orb's unit for the
// same parameter (BATCH_WRITER_TIMEOUT=1000): Go durations always carry a unit, so the two
// cannot be confused.
func (p Param) Millis() Param {
	if d, ok := p.value.(*durationValue); ok {
		p.value = (*millisDurationValue)(d)
	}
	return p
}

// Refused declares an Orb parameter that anchord has no knob for: setting it by flag or by its
// environment variables fails the command with one line, "--<name> is Orb's …: <instead>".
// It is listed apart in --help and never shown by the configuration.
func Refused(name, instead string) Param {
	var ignored stringValue
	return Param{name: name, usage: instead, value: &ignored, refusal: instead}
}

// IsRefused reports whether p is an Orb parameter anchord refuses.
func (p Param) IsRefused() bool { return p.refusal != "" }

// String binds a string field.
func String(field *string, name, usage string) Param {
	return Param{name: name, usage: usage, value: (*stringValue)(field)}
}

// Secret binds a string field whose value must be redacted when logged (URLs with passwords).
func Secret(field *string, name, usage string) Param {
	return Param{name: name, usage: usage, value: (*stringValue)(field), secret: true}
}

// Int binds an int field.
func Int(field *int, name, usage string) Param {
	return Param{name: name, usage: usage, value: (*intValue)(field)}
}

// Int64 binds an int64 field.
func Int64(field *int64, name, usage string) Param {
	return Param{name: name, usage: usage, value: (*int64Value)(field)}
}

// Float binds a float64 field.
func Float(field *float64, name, usage string) Param {
	return Param{name: name, usage: usage, value: (*floatValue)(field)}
}

// Bool binds a bool field.
func Bool(field *bool, name, usage string) Param {
	return Param{name: name, usage: usage, value: (*boolValue)(field)}
}

// Duration binds a time.Duration field (Go duration syntax, "2s").
func Duration(field *time.Duration, name, usage string) Param {
	return Param{name: name, usage: usage, value: (*durationValue)(field)}
}

// Error names the parameter whose value is invalid.
type Error struct {
	Param string // flag name without dashes
	Value string
	Err   error
	// Env is the environment variable the value came from; empty for a flag.
	Env string
}

func (e *Error) Error() string {
	if e.Env != "" {
		return fmt.Sprintf("invalid value %q for %s (--%s): %v", e.Value, e.Env, e.Param, e.Err)
	}
	return fmt.Sprintf("invalid value %q for --%s (%s): %v", e.Value, e.Param, EnvName(e.Param), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Value returns the parameter's current value as a string (its default, before Parse).
func (p Param) Value() string { return p.value.String() }

// LogValue returns the parameter's current value with its type, for structured logs: integers,
// numbers and booleans as such, durations as Go duration text ("1m0s", not nanoseconds), strings
// as text with secrets redacted.
func (p Param) LogValue() slog.Value {
	switch v := p.value.(type) {
	case *intValue:
		return slog.IntValue(int(*v))
	case *int64Value:
		return slog.Int64Value(int64(*v))
	case *floatValue:
		return slog.Float64Value(float64(*v))
	case *boolValue:
		return slog.BoolValue(bool(*v))
	}
	return slog.StringValue(shown(p, p.value.String()))
}

// IsSecret reports whether the value must be redacted when shown.
func (p Param) IsSecret() bool { return p.secret }

// ErrHelp is returned by Parse when -h or --help was given; the usage has been written.
var ErrHelp = errors.New("help requested")

// Parse applies environment variables and then args to params. Errors are one line naming the
// parameter. With -h/--help it writes the usage to out and returns ErrHelp.
func Parse(command string, args []string, lookupEnv func(string) (string, bool), params []Param, out io.Writer) error {
	_, err := ParseSources(command, args, lookupEnv, params, out)
	return err
}

// ParseSources is Parse that also returns, for each parameter whose value came from an
// environment variable (no flag set it), that variable's name, so that a later validation
// error can name where the operator set the value.
func ParseSources(command string, args []string, lookupEnv func(string) (string, bool), params []Param, out io.Writer) (map[string]string, error) {
	sources := map[string]string{}
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	byName := make(map[string]Param, len(params))
	for _, p := range params {
		fs.Var(p.value, p.name, p.usage)
		byName[p.name] = p
		for _, a := range p.aliases {
			fs.Var(p.value, a, p.usage)
			byName[a] = p
		}
	}
	for _, p := range params {
		// Foreign variables and aliases first, so that the primary name wins.
		envs := slices.Clone(p.envs)
		for _, name := range append(slices.Clone(p.aliases), p.name) {
			envs = append(envs, EnvName(name))
		}
		for _, env := range envs {
			if v, ok := lookupEnv(env); ok {
				if p.refusal != "" {
					return nil, fmt.Errorf("%s: --%s is Orb's, and anchord does not have it: %s", env, p.name, p.refusal)
				}
				if err := p.value.Set(v); err != nil {
					return nil, &Error{Param: p.name, Value: shown(p, v), Err: err, Env: env}
				}
				sources[p.name] = env
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeUsage(out, command, params)
			return nil, ErrHelp
		}
		return nil, flagError(err, byName, command)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (see anchord %s --help)", fs.Arg(0), command)
	}
	var refused error
	fs.Visit(func(f *flag.Flag) {
		delete(sources, byName[f.Name].name)
		if p := byName[f.Name]; p.refusal != "" && refused == nil {
			refused = fmt.Errorf("--%s is Orb's, and anchord does not have it: %s", f.Name, p.refusal)
		}
	})
	return sources, refused
}

// flagError turns the flag package's messages into one line naming the parameter.
func flagError(err error, byName map[string]Param, command string) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		if near := nearest(name, byName); near != "" {
			return fmt.Errorf("unknown parameter --%s: did you mean --%s? (see anchord %s --help)", name, near, command)
		}
		return fmt.Errorf("unknown parameter --%s (see anchord %s --help)", name, command)
	}
	// "invalid value "x" for flag -name: parse error"
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			val, _ := strconv.Unquote(rest[:i])
			tail := rest[i+len(" for flag -"):]
			name, reason, _ := strings.Cut(tail, ": ")
			if p, ok := byName[name]; ok {
				return &Error{Param: name, Value: shown(p, val), Err: errors.New(reason)}
			}
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("parameter --%s needs a value (see anchord %s --help)", strings.TrimLeft(name, "-"), command)
	}
	return fmt.Errorf("%s: %w", command, err)
}

// nearest returns the parameter name closest to name (edit distance at most a third of its
// length, and at least 1 allowed), or "" when none is close; refused names are not suggested.
func nearest(name string, byName map[string]Param) string {
	best, bestDist := "", max(2, len(name)/3)+1
	for candidate, p := range byName {
		if p.refusal != "" {
			continue
		}
		d := distance(name, candidate)
		if d < bestDist || (d == bestDist && candidate < best) {
			best, bestDist = candidate, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, in bytes (parameter names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func shown(p Param, v string) string {
	if p.secret {
		return secret.RedactURL(v)
	}
	return v
}

// HelpWidth is the width --help fits in.
const HelpWidth = 100

// InGroup returns p filed under the heading group in --help; rank orders the headings.
// Commands whose parameters have no group list them under none.
func (p Param) InGroup(group string, rank int) Param {
	p.group, p.groupRank = group, rank
	return p
}

// writeUsage lists the parameters by group (the start-up log's groups for serve), each as a
// line with its flag, default and environment variables, then its description, wrapped to
// HelpWidth columns.
func writeUsage(out io.Writer, command string, params []Param) {
	fmt.Fprintf(out, "Usage: anchord %s [parameters]\n\n", command)
	fmt.Fprintf(out, "%s", wrap("Every parameter can also be set by its environment variable; a flag wins over the variable, and ANCHORD_* over Orb's.", "", HelpWidth))
	sorted := append([]Param(nil), params...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].groupRank != sorted[j].groupRank {
			return sorted[i].groupRank < sorted[j].groupRank
		}
		return sorted[i].name < sorted[j].name
	})
	var refused []Param
	group := "\x00"
	for _, p := range sorted {
		if p.refusal != "" {
			refused = append(refused, p)
			continue
		}
		if p.group != group {
			group = p.group
			if group != "" {
				fmt.Fprintf(out, "\n%s:\n", group)
			} else {
				fmt.Fprintln(out)
			}
		}
		def := p.value.String()
		if def == "" {
			def = `""`
		} else if p.secret {
			def = secret.RedactURL(def)
		}
		head := "--" + p.name + " = " + def
		envs := []string{EnvName(p.name)}
		for _, a := range p.aliases {
			head += ", --" + a
			envs = append(envs, EnvName(a))
		}
		envs = append(envs, p.envs...)
		head += "  (" + strings.Join(envs, ", ") + ")"
		fmt.Fprint(out, wrap(head, "  ", HelpWidth))
		fmt.Fprint(out, wrap(p.usage, "        ", HelpWidth))
	}
	if len(refused) > 0 {
		fmt.Fprintf(out, "\nOrb's parameters that anchord does not have (setting one fails; use instead):\n")
		for _, p := range refused {
			fmt.Fprint(out, wrap("--"+p.name+" ("+strings.Join(p.envs, ", ")+")", "  ", HelpWidth))
			fmt.Fprint(out, wrap(p.refusal, "        ", HelpWidth))
		}
	}
}

// wrap breaks text into lines of at most width columns (a longer word gets a line of its own),
// each starting with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(text) {
		if line != indent && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}

// LookupEnv is os.LookupEnv, named for callers that pass it to Parse.
func LookupEnv(key string) (string, bool) { return os.LookupEnv(key) }

type stringValue string

func (v *stringValue) String() string     { return string(*v) }
func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }

type intValue int

func (v *intValue) String() string { return strconv.Itoa(int(*v)) }
func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not an integer")
	}
	*v = intValue(n)
	return nil
}

type int64Value int64

func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }
func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	*v = int64Value(n)
	return nil
}

type floatValue float64

func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return errors.New("not a number")
	}
	*v = floatValue(f)
	return nil
}

type boolValue bool

func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }
func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return errors.New("not a boolean (true or false)")
	}
	*v = boolValue(b)
	return nil
}

type millisDurationValue time.Duration

func (v *millisDurationValue) String() string { return time.Duration(*v).String() }
func (v *millisDurationValue) Set(s string) error {
	if ms, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		*v = millisDurationValue(time.Duration(ms) * time.Millisecond)
		return nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return errors.New(`not a duration (Go syntax, e.g. "2s", "500ms", or an integer of milliseconds, as Orb's)`)
	}
	*v = millisDurationValue(d)
	return nil
}

type durationValue time.Duration

func (v *durationValue) String() string { return time.Duration(*v).String() }
func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return errors.New(`not a duration (Go syntax, e.g. "2s", "500ms", "1m")`)
	}
	*v = durationValue(d)
	return nil
}
