package daemon

import "github.com/anchord/anchord/internal/witness"

// witnessPolicy serves the witness policy on the admin listener (GET/POST /policy, and
// /admin/v1/policy). Every shape gets it: the policy lives in the shared store, so any instance
// of a cluster, the submitter included, can show or set it.
func (c *core) witnessPolicy() {
	c.adminRoutes = append(c.adminRoutes, witness.PolicyRoutes(c.st, c.log("admin")))
}
