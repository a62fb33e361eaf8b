-- The per-DID index keyed by where an operation was anchored, with a separate index by suffix.
-- Keyed by suffix, each batch of 10,000 operations touched ~10,000 random pages of a table that
-- holds every request, and the observer held SQLite's write lock (which every accepted
-- operation's commit waits for) for as long as that took; keyed by (anchor_seq, op_index) the
-- rows of a batch are appended to the end of the table, and only the narrow suffix index takes
-- random inserts.
CREATE TABLE did_operations_by_anchor (
    anchor_seq INTEGER NOT NULL,
    op_index   INTEGER NOT NULL,
    suffix     TEXT    NOT NULL,
    op_type    TEXT    NOT NULL,
    request    BLOB    NOT NULL,
    PRIMARY KEY (anchor_seq, op_index)
) WITHOUT ROWID;
INSERT INTO did_operations_by_anchor (anchor_seq, op_index, suffix, op_type, request)
    SELECT anchor_seq, op_index, suffix, op_type, request FROM did_operations ORDER BY anchor_seq, op_index;
DROP TABLE did_operations;
ALTER TABLE did_operations_by_anchor RENAME TO did_operations;
-- Entries of an index on a WITHOUT ROWID table carry the primary key, so this one answers
-- "operations of a suffix in anchor order" and "latest anchor of a suffix" on its own.
CREATE INDEX did_operations_suffix ON did_operations (suffix);
