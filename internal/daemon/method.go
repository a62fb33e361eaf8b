package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/anchord/anchord/internal/store"
)

// didMethodSetting names the setting that records the DID method a store's DIDs belong to.
const didMethodSetting = "did_method"

// pinDIDMethod records the configured DID method in the store at its first start and refuses to
// start when a later start configures another. The method is not part of what is anchored (a
// suffix is the same under any method), so starting a store with another method would silently
// relabel every DID in it: clients holding did:ion:… identifiers would find them gone, and new
// ones would appear under a name nobody asked for. Instances of a cluster share the setting, so
// they cannot disagree either.
func (c *core) pinDIDMethod(ctx context.Context) error {
	method := c.profile.Method
	first := true
	err := c.st.SettingInsert(ctx, didMethodSetting, []byte(method))
	if errors.Is(err, store.ErrConflict) {
		first = false
		var recorded []byte
		recorded, err = c.st.SettingGet(ctx, didMethodSetting)
		if err == nil && string(recorded) != method {
			return fmt.Errorf("--did-method %s: this store's DIDs are did:%s:… (recorded at its first start); "+
				"start with --did-method %s, or give another method its own --data-dir or database", method, recorded, recorded)
		}
	}
	if err != nil {
		return fmt.Errorf("record the DID method: %w", err)
	}
	c.logger.Info("DID method", "did_method", method, "dids", "did:"+method+":…", "first_start", first)
	return nil
}
