package witness

import (
	"context"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

// PolicySetting is the settings row holding the domain's witness policy, in its canonical text
// (Policy.String). Orb keeps the same text under its config key "witness-policy".
const PolicySetting = "witness_policy"

// PolicyReader reads settings; store.Executor is one.
type PolicyReader interface {
	SettingGet(ctx context.Context, name string) ([]byte, error)
}

// PolicyWriter replaces settings; store.Executor is one.
type PolicyWriter interface {
	SettingPut(ctx context.Context, name string, value []byte) error
}

// LoadPolicy reads the domain's witness policy. A domain whose operator never set one has the
// default policy (every batch and every system witness), as in Orb. A stored text that no
// longer parses is an error, not the default: quietly asking every witness instead of the
// operator's choice would hide the fault.
func LoadPolicy(ctx context.Context, st PolicyReader) (Policy, error) {
	raw, err := st.SettingGet(ctx, PolicySetting)
	if errors.Is(err, store.ErrNotFound) {
		return DefaultPolicy(), nil
	}
	if err != nil {
		return Policy{}, fmt.Errorf("load witness policy: %w", err)
	}
	p, err := Parse(string(raw))
	if err != nil {
		return Policy{}, fmt.Errorf("load witness policy %q: %w", raw, err)
	}
	return p, nil
}

// SavePolicy stores p as the domain's witness policy, replacing the one before. The default
// policy is stored too (as the empty text), so that setting it is an explicit choice on record.
func SavePolicy(ctx context.Context, st PolicyWriter, p Policy) error {
	if err := st.SettingPut(ctx, PolicySetting, []byte(p.String())); err != nil {
		return fmt.Errorf("save witness policy: %w", err)
	}
	return nil
}
