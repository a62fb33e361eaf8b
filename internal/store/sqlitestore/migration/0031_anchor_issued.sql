-- The whole second (Unix time) in which each anchor was issued: its credential's issuanceDate,
-- for this domain's anchors the anchor clock's time. In the did:orb profile resolution orders a
-- DID's updates against it as Orb does (sidetree.AnchoredOperation.Time). NULL for the anchors
-- recorded before it was kept: resolution then does not apply that rule to them.
ALTER TABLE anchors ADD COLUMN issued_at INTEGER;
