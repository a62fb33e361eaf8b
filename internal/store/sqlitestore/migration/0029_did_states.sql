-- Each DID's state in compact binary form (sidetree.StateRecord), which the observer computes
-- when it indexes the DID's operations: resolving a DID the resolver has not cached reads this
-- one row and renders it, instead of reading and parsing the DID's operations.
CREATE TABLE did_states (
    suffix TEXT PRIMARY KEY,
    state  BLOB NOT NULL
) WITHOUT ROWID;
-- The states of the DIDs indexed before now are computed by the daemon at its next start
-- (observer.FillStates), which this setting asks for.
INSERT INTO settings (name, value, created_at)
    SELECT 'did_states_fill', x'', CAST(strftime('%s', 'now') AS INTEGER) * 1000000
    WHERE EXISTS (SELECT 1 FROM did_operations);
