-- 011: emulator/schema/011_owner_claim.sql in PostgreSQL's SQL (the same version, the
-- same table; notes there): names an owner holds while its lease lives.
CREATE TABLE owner_claim (
  name  text COLLATE "C" NOT NULL PRIMARY KEY,
  owner text COLLATE "C" NOT NULL
);
