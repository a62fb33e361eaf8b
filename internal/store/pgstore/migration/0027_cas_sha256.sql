-- The sha2-256 digest of each file, so that a file is also found by the hash a hashlink names it
-- by (did:orb batch files name each other by hashlinks, and Orb's /cas serves by that hash).
-- Files stored before have none and are served by CID only.
ALTER TABLE cas_objects ADD COLUMN sha256 BYTEA;
CREATE INDEX cas_objects_sha256 ON cas_objects (sha256) WHERE sha256 IS NOT NULL;
