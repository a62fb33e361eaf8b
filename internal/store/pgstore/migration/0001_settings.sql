-- Named values written once and read often: the domain's signing key, the instance's identity.
CREATE TABLE settings (
    name       TEXT        PRIMARY KEY,
    value      BYTEA       NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
