-- Where each DID's operations were anchored (store.DIDState.Positions), beside its state: with
-- it the per-DID index needs no second ordering by suffix. Each create inserted into two
-- B-trees in random (suffix) order, did_operations_suffix and did_states, and each dirtied a
-- page per create in the observer's commits, inside SQLite's one writer that every other commit
-- waits for; now a DID's rows are found through its state. A database with operations indexed
-- before this keeps its suffix index and reads through it (its older states have no positions);
-- at start, while the index is still empty, the store drops did_operations_suffix and lays out
-- did_states by rowid (sqlitestore.settleIndexLayout).
ALTER TABLE did_states ADD COLUMN positions BLOB;
