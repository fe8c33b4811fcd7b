-- Console security (issue 9): a per-installation secret for key hashes, and revocable console sessions.

-- One row: the 32-byte secret that keys HMAC-SHA256(secret, scope 0x1F key), created here by the
-- first migrate() from PostgreSQL's strong random source (gen_random_uuid() draws from
-- pg_strong_random; four of them, 488 random bits, are condensed by SHA-256 into 32 bytes).
-- A process given WORKHORSE_KEY_SECRET uses that instead and ignores key_secret.
--
-- legacy_key_hashes_until: bindings made before this migration carry plain SHA-256 hashes. Until the
-- last of them expires, enqueue also looks for the legacy hash so such a key still replays; after
-- this instant no legacy binding can own a key and the extra lookup is skipped. Null when there was
-- no live binding at upgrade time (a new installation).
create table workhorse.installation (
  singleton               boolean primary key default true check (singleton),
  key_secret              bytea not null check (octet_length(key_secret) = 32),
  created_at              timestamptz not null default now(),
  legacy_key_hashes_until timestamptz
);

insert into workhorse.installation (key_secret, legacy_key_hashes_until)
select sha256(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())
              || uuid_send(gen_random_uuid())),
       (select max(b.expires_at) from workhorse.idempotency_binding b where b.expires_at > now());

-- Console sessions. The cookie carries a random session id (sealed); only its SHA-256 is stored, so
-- a copy of this table cannot be replayed as a cookie. A session ends when its row is gone (sign-out,
-- "sign out everywhere"), when it has been idle past idle_expires_at, at expires_at (absolute), or
-- when password_fingerprint no longer matches the configured password (a password change).
create table workhorse.console_session (
  id_hash              bytea primary key check (octet_length(id_hash) = 32),
  actor                text not null check (char_length(actor) between 1 and 200),
  password_fingerprint text not null check (char_length(password_fingerprint) between 1 and 128),
  client_address       text check (char_length(client_address) <= 64),
  created_at           timestamptz not null default now(),
  last_seen_at         timestamptz not null default now(),
  idle_expires_at      timestamptz not null,
  expires_at           timestamptz not null,
  check (idle_expires_at <= expires_at)
);
create index console_session_expires_idx on workhorse.console_session (expires_at);
