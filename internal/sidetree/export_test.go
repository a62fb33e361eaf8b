package sidetree

// ForgetVerified empties the set of verified signatures, so that a benchmark measures
// verification itself.
func ForgetVerified() {
	verified.mu.Lock()
	clear(verified.m)
	verified.mu.Unlock()
}

// Held returns the entries of c and the memory they are charged.
func (c *OperationCache) Held() (entries, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m), c.bytes
}
