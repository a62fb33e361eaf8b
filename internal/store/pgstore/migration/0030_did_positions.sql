-- Where each DID's operations were anchored (store.DIDState.Positions), beside its state: with
-- it the per-DID index needs no second ordering by suffix. Each create inserted into three
-- B-trees in random order, did_operations' primary key by (suffix, anchor, index), did_states'
-- by suffix and anchored_ops' by operation; once they outgrow shared_buffers each insert may
-- evict a dirty page and read one back. Now a DID's rows are found through its state, and
-- did_operations is keyed by (anchor, index), where a batch's rows are appended.
ALTER TABLE did_states ADD COLUMN positions BYTEA;

-- Only an index that holds nothing yet is re-keyed: rebuilding the key of millions of rows
-- would hold every instance's start. A database with operations indexed before this keeps its
-- key by suffix and reads through it (its older states name no positions).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM did_operations) AND NOT EXISTS (SELECT 1 FROM did_states) THEN
        ALTER TABLE did_operations DROP CONSTRAINT did_operations_pkey;
        ALTER TABLE did_operations ADD PRIMARY KEY (anchor_seq, op_index);
    END IF;
END $$;
